//! `dsh cache`: positions, causes, the DeepSeek prediction and replacements.
//!
//! The centre is a loopback provider that implements DeepSeek's prefix-unit
//! cache on its own (units at the end of every request's input and output and
//! at detected common prefixes, matched whole, hits in blocks of 128 tokens),
//! keyed by the JSON text of the request's parts rather than by seqs; an
//! answer whose reasoning DeepSeek's history drops is read back other than
//! generated, so its output unit is never matched. A
//! generator drives a session through it over HTTP — tool calls, a prune
//! pass, a compaction, a system-prompt change — and writes the log the way
//! the harness does, with the usage the provider reported. `dsh cache` must
//! predict exactly the `cacheReadTokens` the provider reported, request by
//! request. The provider counts tokens with DSH's heuristic (as dsh does),
//! so the test checks the cache rule, not a tokenizer.
//!
//! A second loopback provider implements Anthropic's breakpoint cache from
//! the `cache_control` markers of the request it receives: the prompt laid
//! out tools → system → messages, up to 4 breakpoints each with its TTL
//! (5 minutes, or 1 hour with `"ttl": "1h"`, longer TTLs first), entries
//! refreshed on use and expiring on the request's clock, a 20-block
//! lookback from each breakpoint, and the usage Anthropic reports
//! (`cache_read_input_tokens`, `cache_creation_input_tokens` and its
//! `cache_creation` split by TTL). The generator places the markers of a
//! layout; `dsh cache --anthropic-breakpoints` with that layout must
//! predict every request's read and writes.

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value as J, json};

use crate::provider::read_request;
use crate::support::{TestEnv, rows_one_by_one, shared};

// --- DSH's heuristic, written again from the spec (compaction §1.1–§1.3).

fn q(s: &str) -> u64 {
    (s.encode_utf16().count() as u64).div_ceil(4)
}

fn block_price(b: &J) -> u64 {
    match b["type"].as_str() {
        Some("text") | Some("reasoning") => q(b["text"].as_str().unwrap_or("")) + 4,
        Some("tool-call") => {
            q(b["name"].as_str().unwrap_or("")) + q(b["arguments"].as_str().unwrap_or("")) + 4
        }
        Some("tool-result") => {
            b["content"]
                .as_array()
                .map_or(0, |c| c.iter().map(block_price).sum::<u64>())
                + 4
        }
        _ => 4 + q(&b.to_string()),
    }
}

fn message_price(m: &J) -> u64 {
    m["content"]
        .as_array()
        .map_or(0, |c| c.iter().map(block_price).sum::<u64>())
        + 4
}

// --- The loopback provider.

const BLOCK: u64 = 128;

/// Whether DeepSeek's history leaves out this assistant message's
/// reasoning: it has some and no tool call (DeepSeek ignores reasoning
/// passed back on such a turn). It is then not what the model generated.
fn drops_reasoning(m: &J) -> bool {
    let blocks = m["content"].as_array().map_or(&[][..], |a| &a[..]);
    m["role"] == "assistant"
        && blocks.iter().any(|b| b["type"] == "reasoning")
        && !blocks.iter().any(|b| b["type"] == "tool-call")
}

/// A request's parts as the provider keys them: model, system, tools, then
/// one per message; each with its tokens. A message whose reasoning the
/// history drops is keyed as rendered, not as generated (its tokens are
/// still the heuristic's, which dsh counts).
fn parts(body: &J) -> Vec<(String, u64)> {
    let mut p = vec![(format!("model:{}", body["model"]), 0)];
    if let Some(s) = body["system"].as_str() {
        p.push((format!("system:{s}"), q(s) + 4));
    }
    if let Some(t) = body["tools"].as_array() {
        let text = J::Array(t.clone()).to_string();
        p.push((format!("tools:{text}"), q(&text) + 4));
    }
    for m in body["messages"].as_array().unwrap() {
        let key = if drops_reasoning(m) {
            format!("rendered without its reasoning:{m}")
        } else {
            m.to_string()
        };
        p.push((key, message_price(m)));
    }
    p
}

/// Anthropic's shortest cacheable prefix (tokens) and lookback (blocks).
const ANTHROPIC_MIN: u64 = 1024;
const LOOKBACK: usize = 20;

/// `cache_control` removed: the markers are not part of the content.
fn unmarked(v: &J) -> J {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("cache_control");
    }
    v
}

/// A marker's TTL in ms: `{"type": "ephemeral"}` is 5 minutes,
/// `"ttl": "1h"` one hour.
fn marker_ttl(v: &J) -> Option<u64> {
    let c = v.get("cache_control")?;
    assert_eq!(c["type"], "ephemeral");
    Some(match c["ttl"].as_str() {
        None | Some("5m") => 300_000,
        Some("1h") => 3_600_000,
        Some(t) => panic!("unknown ttl {t}"),
    })
}

/// Anthropic's prompt cache, from the markers of a Messages API request.
/// Blocks are the parts dsh counts: the tools, the system prompt, each
/// message.
#[derive(Default)]
struct AnthropicCache {
    /// Written prefixes: their parts, last use and lifetime (ms).
    entries: std::collections::HashMap<Vec<String>, (u64, u64)>,
}

impl AnthropicCache {
    fn serve(&mut self, body: &J) -> Result<J, String> {
        let now = body["now"].as_u64().expect("the request's clock");
        // Parts in Anthropic's order, whatever the JSON's key order.
        let mut keys = vec![format!("model:{}", body["model"])];
        let mut tokens = vec![0u64];
        let mut marks: Vec<(usize, u64)> = Vec::new();
        if let Some(tools) = body["tools"].as_array() {
            let plain = J::Array(tools.iter().map(unmarked).collect()).to_string();
            keys.push(format!("tools:{plain}"));
            tokens.push(q(&plain) + 4);
            if let Some(t) = tools.iter().filter_map(marker_ttl).next_back() {
                marks.push((keys.len() - 1, t));
            }
        }
        if let Some(system) = body["system"].as_array() {
            let text: String = system.iter().map(|b| b["text"].as_str().unwrap()).collect();
            keys.push(format!("system:{text}"));
            tokens.push(q(&text) + 4);
            if let Some(t) = system.iter().filter_map(marker_ttl).next_back() {
                marks.push((keys.len() - 1, t));
            }
        }
        for m in body["messages"].as_array().unwrap() {
            let blocks = m["content"].as_array().unwrap();
            let plain = json!({"role": m["role"], "content": blocks.iter().map(unmarked).collect::<Vec<_>>()});
            tokens.push(message_price(&plain));
            keys.push(plain.to_string());
            if let Some(t) = blocks.iter().filter_map(marker_ttl).next_back() {
                marks.push((keys.len() - 1, t));
            }
        }
        if marks.len() > 4 {
            return Err(format!("{} cache_control blocks, at most 4", marks.len()));
        }
        if marks.windows(2).any(|w| w[0].1 < w[1].1) {
            return Err("a longer TTL after a shorter one".into());
        }
        // Token offset at the end of each part.
        let end: Vec<u64> = tokens
            .iter()
            .scan(0, |a, t| {
                *a += t;
                Some(*a)
            })
            .collect();
        let prompt = *end.last().unwrap();
        // Each breakpoint reads the longest live entry in its window; reads
        // refresh; the request reads the longest of them (A).
        let mut a: Option<usize> = None;
        for &(m, _) in &marks {
            let hit = (m.saturating_sub(LOOKBACK)..=m).rev().find(|&i| {
                self.entries
                    .get(&keys[..=i])
                    .is_some_and(|&(used, ttl)| now - used <= ttl)
            });
            if let Some(i) = hit {
                self.entries.get_mut(&keys[..=i]).unwrap().0 = now;
                a = a.max(Some(i));
            }
        }
        let read = a.map_or(0, |i| end[i]);
        // Breakpoints past A are written (when long enough): 1-hour writes
        // up to the last 1-hour one (B), 5-minute writes from B to the last
        // one (C).
        let (mut b, mut c) = (read, read);
        for &(m, ttl) in &marks {
            if a.is_none_or(|a| m > a) && end[m] >= ANTHROPIC_MIN {
                self.entries.insert(keys[..=m].to_vec(), (now, ttl));
                if ttl == 3_600_000 {
                    b = end[m];
                }
                c = end[m];
            }
        }
        let out = message_price(&body["reply"]);
        Ok(json!({"usage": {
            "input_tokens": prompt - c,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": c - read,
            "cache_creation": {"ephemeral_5m_input_tokens": c - b, "ephemeral_1h_input_tokens": b - read},
            "output_tokens": out
        }}))
    }
}

#[derive(Default)]
struct PrefixCache {
    /// Persisted units: their parts, and their token length.
    units: Vec<(Vec<String>, u64)>,
    /// Everything processed so far (prompt + output of every request).
    history: Vec<Vec<String>>,
}

impl PrefixCache {
    fn serve(&mut self, body: &J) -> J {
        let p = parts(body);
        let keys: Vec<String> = p.iter().map(|x| x.0.clone()).collect();
        let prompt: u64 = p.iter().map(|x| x.1).sum();
        // Hit: the longest unit this prompt matches completely.
        let hit = self
            .units
            .iter()
            .filter(|(u, _)| u.len() <= keys.len() && keys[..u.len()] == u[..])
            .map(|(_, t)| t / BLOCK * BLOCK)
            .max()
            .unwrap_or(0);
        // Common prefix with anything processed before becomes a unit.
        let common = self
            .history
            .iter()
            .map(|h| h.iter().zip(&keys).take_while(|(a, b)| a == b).count())
            .max()
            .unwrap_or(0);
        if common >= 2 {
            let t = p[..common].iter().map(|x| x.1).sum();
            self.units.push((keys[..common].to_vec(), t));
        }
        let reply = &body["reply"];
        let out = message_price(reply);
        let mut with_out = keys.clone();
        with_out.push(reply.to_string());
        self.units.push((keys.clone(), prompt));
        self.units.push((with_out.clone(), prompt + out));
        self.history.push(keys);
        self.history.push(with_out);
        json!({"usage": {"prompt_tokens": prompt, "completion_tokens": out, "prompt_cache_hit_tokens": hit}})
    }
}

struct Provider {
    base: String,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Provider {
    fn start(requests: usize) -> Provider {
        Provider::start_as(requests, false)
    }

    fn start_as(requests: usize, anthropic: bool) -> Provider {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let cache = Arc::new(Mutex::new(PrefixCache::default()));
        let breakpoints = Arc::new(Mutex::new(AnthropicCache::default()));
        let handle = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut served = 0;
            while served < requests && Instant::now() < deadline {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        s.set_nonblocking(false).ok();
                        if let Some(req) = read_request(&mut s) {
                            let body: J = serde_json::from_slice(&req.body).unwrap();
                            let (status, reply) = if anthropic {
                                match breakpoints.lock().unwrap().serve(&body) {
                                    Ok(r) => ("200 OK", r.to_string()),
                                    Err(e) => ("400 Bad Request", json!({"error": e}).to_string()),
                                }
                            } else {
                                ("200 OK", cache.lock().unwrap().serve(&body).to_string())
                            };
                            let _ = write!(
                                s,
                                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                                reply.len()
                            );
                            served += 1;
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Provider {
            base,
            handle: Some(handle),
        }
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

// --- The generator: a session written the harness's way.

/// One request as the generator saw it: the message's seq, the prompt, the
/// reported hit, and each node's token offset (seq, offset).
type Sent = (u64, u64, u64, Vec<(u64, u64)>);

struct Gen {
    lines: Vec<String>,
    seq: u64,
    time: u64,
    system: String,
    tools: J,
    surface: Vec<(u64, J)>,
    base: Option<String>,
    turn: u64,
    step: u64,
    /// Per request: (message seq, prompt, reported hit, token offset per node seq).
    requests: Vec<Sent>,
    header_logged: bool,
    provider: &'static str,
    model: &'static str,
    /// Anthropic requests: the `cache_control` layout the client sends
    /// (place, TTL), in prompt order.
    layout: Vec<(&'static str, &'static str)>,
    /// Per request: the reported cache writes (5-minute, 1-hour).
    writes: Vec<(u64, u64)>,
}

fn text(t: &str) -> J {
    json!({"type": "text", "text": t})
}

fn filler(tag: &str, n: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!(
            "{tag} line {i}: the quick brown fox jumps over the lazy dog. "
        ));
        i += 1;
    }
    s
}

impl Gen {
    fn new(base: Option<String>) -> Gen {
        let mut g = Gen {
            lines: vec![
                json!({"type":"session","version":0,"id":"cache-test","createdAt":1780000000000u64,"cwd":"/work","delegationDepth":0}).to_string(),
            ],
            seq: 0,
            time: 1_780_000_000_000,
            system: filler("system", 1200),
            tools: json!([{"name":"read","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}]),
            surface: Vec::new(),
            base,
            turn: 0,
            step: 0,
            requests: Vec::new(),
            header_logged: false,
            provider: "deepseek-official",
            model: "deepseek-v4-flash",
            layout: Vec::new(),
            writes: Vec::new(),
        };
        g.time += 1;
        g
    }

    fn ev(&mut self, ty: &str, data: J, op: Option<J>, sources: Option<Vec<u64>>) -> u64 {
        let seq = self.seq;
        let mut e = json!({"type": ty, "seq": seq, "time": self.time, "data": data});
        if let Some(s) = sources {
            e["sourceEventSeqs"] = json!(s);
        }
        if let Some(op) = op {
            e["surfaceOp"] = op;
        }
        self.lines.push(e.to_string());
        self.seq += 1;
        self.time += 1000;
        seq
    }

    fn append(&mut self, ty: &str, data: J, msg: J, sources: Option<Vec<u64>>) -> u64 {
        let seq = self.ev(ty, data, Some(json!("append")), sources);
        self.surface.push((seq, msg));
        seq
    }

    fn header(&mut self, reason: &str) {
        let h = json!({"header": {"config": {"provider": self.provider, "model": self.model}, "system": self.system, "tools": self.tools}, "reason": reason});
        self.ev("request/header", h, None, None);
        self.header_logged = true;
    }

    fn turn_start(&mut self, prompt: &str) {
        self.turn += 1;
        self.step = 0;
        self.ev("turn/start", json!({"turn": self.turn}), None, None);
        self.step_start();
        let m = json!({"id": format!("u{}", self.turn), "role": "user", "content": [text(prompt)], "source": {"kind": "user"}});
        self.append("user/message", m.clone(), m, None);
    }

    fn step_start(&mut self) {
        self.step += 1;
        self.ev(
            "step/start",
            json!({"turn": self.turn, "step": self.step}),
            None,
            None,
        );
    }

    fn step_end(&mut self) {
        self.ev(
            "step/end",
            json!({"turn": self.turn, "step": self.step}),
            None,
            None,
        );
    }

    fn turn_end(&mut self) {
        self.step_end();
        self.ev(
            "turn/end",
            json!({"turn": self.turn, "reason": {"kind": "completed"}}),
            None,
            None,
        );
    }

    /// One model request: ask the provider, log the assistant message with
    /// the usage it reported.
    fn model(&mut self, content: Vec<J>) -> u64 {
        if !self.header_logged {
            self.header("initial");
        }
        let id = format!("a{}", self.seq);
        let reply = json!({"id": id, "role": "assistant", "content": content, "source": {"kind": "model", "provider": self.provider, "model": self.model}});
        let messages: Vec<J> = self.surface.iter().map(|(_, m)| m.clone()).collect();
        let anthropic = self.provider == "anthropic";
        let (path, body) = if anthropic {
            ("/v1/messages", self.anthropic_body(&messages, &reply))
        } else {
            (
                "/chat/completions",
                json!({"model": self.model, "system": self.system, "tools": self.tools, "messages": messages, "reply": reply}),
            )
        };
        // Offsets of each node, as the provider counts them.
        let mut at = q(&self.system) + 4 + q(&self.tools.to_string()) + 4;
        let mut offsets = Vec::new();
        for (s, m) in &self.surface {
            offsets.push((*s, at));
            at += message_price(m);
        }
        let (prompt, hit, split) = match &self.base {
            Some(base) => {
                let text = ureq::post(&format!("{base}{path}"))
                    .send_string(&body.to_string())
                    .unwrap()
                    .into_string()
                    .unwrap();
                let resp: J = serde_json::from_str(&text).unwrap();
                let u = &resp["usage"];
                match u["prompt_tokens"].as_u64() {
                    Some(p) => (p, u["prompt_cache_hit_tokens"].as_u64().unwrap(), (0, 0)),
                    None => {
                        let n = |v: &J| v.as_u64().unwrap();
                        let (r, w) = (
                            n(&u["cache_read_input_tokens"]),
                            n(&u["cache_creation_input_tokens"]),
                        );
                        let c = &u["cache_creation"];
                        let split = (
                            n(&c["ephemeral_5m_input_tokens"]),
                            n(&c["ephemeral_1h_input_tokens"]),
                        );
                        assert_eq!(split.0 + split.1, w, "the split adds up: {u}");
                        (n(&u["input_tokens"]) + r + w, r, split)
                    }
                }
            }
            None => (at, 0, (0, 0)),
        };
        assert_eq!(prompt, at, "the provider and the generator count alike");
        // The log keeps what DSH's usage keeps: one cacheWriteTokens.
        let write = split.0 + split.1;
        let usage = json!({"inputTokens": prompt - hit - write, "outputTokens": message_price(&reply), "cacheReadTokens": hit, "cacheWriteTokens": write});
        self.writes.push(split);
        let data =
            json!({"turn": self.turn, "step": self.step, "message": reply.clone(), "usage": usage});
        let seq = self.append("assistant/message", data, reply, None);
        self.requests.push((seq, prompt, hit, offsets));
        seq
    }

    /// A Messages API request with the layout's `cache_control` markers:
    /// on the last tool, on the system prompt, on the last block of the
    /// first user message, of the user message before the last, of the last
    /// message (two places on one block: one marker, the longer TTL).
    fn anthropic_body(&self, messages: &[J], reply: &J) -> J {
        let marker = |ttl: &str| match ttl {
            "1h" => json!({"type": "ephemeral", "ttl": "1h"}),
            _ => json!({"type": "ephemeral"}),
        };
        let mut tools = self.tools.clone();
        let mut system = json!([{"type": "text", "text": self.system}]);
        let mut msgs: Vec<J> = messages
            .iter()
            .map(|m| json!({"role": m["role"], "content": m["content"]}))
            .collect();
        let users: Vec<usize> = (0..msgs.len())
            .filter(|&i| msgs[i]["role"] == "user")
            .collect();
        let mut on_message: Vec<(usize, &str)> = Vec::new();
        for &(place, ttl) in &self.layout {
            match place {
                "tools" => {
                    let last = tools.as_array_mut().unwrap().last_mut().unwrap();
                    last["cache_control"] = marker(ttl);
                }
                "system" => system[0]["cache_control"] = marker(ttl),
                "first-user" => on_message.extend(users.first().map(|&i| (i, ttl))),
                "prev-user" => {
                    on_message.extend(users.len().checked_sub(2).map(|k| (users[k], ttl)))
                }
                "last" => on_message.extend(msgs.len().checked_sub(1).map(|i| (i, ttl))),
                other => panic!("no place {other}"),
            }
        }
        for (i, ttl) in on_message {
            let block = msgs[i]["content"]
                .as_array_mut()
                .unwrap()
                .last_mut()
                .unwrap();
            // The layout lists longer TTLs first: a block already marked
            // keeps its (longer) TTL.
            if block.get("cache_control").is_none() {
                block["cache_control"] = marker(ttl);
            }
        }
        // Keys in an order of their own: the provider lays the prompt out.
        json!({"messages": msgs, "system": system, "model": self.model, "tools": tools, "max_tokens": 1024, "reply": reply, "now": self.time})
    }

    fn tool_step(&mut self, call: &str, result: &str) -> u64 {
        self.model(vec![
            json!({"type": "tool-call", "id": call, "name": "read", "arguments": format!("{{\"path\":\"{call}.txt\"}}")}),
        ]);
        let c = self.ev(
            "tool/call",
            json!({"turn": self.turn, "step": self.step, "callId": call, "name": "read", "arguments": "{}"}),
            None,
            None,
        );
        let m = json!({"id": format!("r-{call}"), "role": "user", "content": [{"type": "tool-result", "toolCallId": call, "content": [text(result)], "isError": false}], "source": {"kind": "tool", "callId": call}});
        let data = json!({"turn": self.turn, "step": self.step, "message": m.clone()});
        let r = self.append("tool/result", data, m, Some(vec![c]));
        self.step_end();
        self.step_start();
        r
    }

    /// Prune the tool result at `seq` to a short text (compaction/prune + a
    /// content-only tool/result replacement).
    fn prune(&mut self, seq: u64) -> u64 {
        let pos = self.surface.iter().position(|(s, _)| *s == seq).unwrap();
        let old = self.surface[pos].1.clone();
        let mut new = old.clone();
        new["content"][0]["content"] = json!([text("[pruned]")]);
        let turn_step = self.lines[seq as usize + 1].clone();
        let orig: J = serde_json::from_str(&turn_step).unwrap();
        self.ev(
            "compaction/prune",
            json!({"shadowedRange": {"start": seq, "end": seq}, "shadowedSeqs": [seq], "shadowedTokenCount": message_price(&old)}),
            None,
            None,
        );
        let data = json!({"turn": orig["data"]["turn"], "step": orig["data"]["step"], "message": new.clone()});
        let r = self.ev(
            "tool/result",
            data,
            Some(json!({"op": "replace", "start": seq, "end": seq})),
            Some(vec![seq]),
        );
        self.surface[pos] = (r, new);
        r
    }

    /// Compact surface positions `0..=end` into a checkpoint.
    fn compact(&mut self, end: usize) -> u64 {
        let shadowed: Vec<u64> = self.surface[..=end].iter().map(|(s, _)| *s).collect();
        let tokens: u64 = self.surface[..=end]
            .iter()
            .map(|(_, m)| message_price(m))
            .sum();
        let (a, b) = (shadowed[0], shadowed[end]);
        let start = self.ev(
            "compaction/start",
            json!({"compactionId": "c1", "turn": null}),
            None,
            None,
        );
        let summary = self.ev(
            "compaction/summary",
            json!({"compactionId": "c1", "summary": [text("the story so far")], "shadowedRange": {"start": a, "end": b}, "shadowedSeqs": shadowed, "shadowedTokenCount": tokens, "provider": "deepseek-official", "model": "deepseek-v4-flash", "usage": {"inputTokens": 300, "outputTokens": 40, "cacheReadTokens": 1024}}),
            None,
            None,
        );
        let m = json!({"id": "cp1", "role": "user", "content": [text("Summary of the conversation so far:\n\n<compacted-summary>"), text("the story so far"), text("</compacted-summary>")], "source": {"kind": "plugin", "plugin": "compact", "compactionId": "c1"}});
        let mut src = vec![start, summary];
        src.extend(&shadowed);
        let c = self.ev(
            "user/message",
            m.clone(),
            Some(json!({"op": "replace", "start": a, "end": b})),
            Some(src),
        );
        self.ev(
            "compaction/end",
            json!({"compactionId": "c1", "turn": null}),
            None,
            None,
        );
        self.surface.splice(0..=end, [(c, m)]);
        c
    }

    fn write(&self, dir: &std::path::Path, name: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, self.lines.join("\n") + "\n").unwrap();
        p
    }
}

/// A session with tool steps, a prune pass, a compaction and a system
/// prompt change; returns the generator and the seqs of interest.
fn scripted(g: &mut Gen) -> (u64, u64, u64) {
    g.turn_start(&filler("question one", 600));
    let r1 = g.tool_step("call_1", &filler("file one", 3000));
    // A reasoned answer: its output unit is never matched (the history
    // drops its reasoning).
    g.model(vec![
        json!({"type": "reasoning", "text": filler("thinking", 900)}),
        text(&filler("answer one", 500)),
    ]);
    g.turn_end();
    g.turn_start(&filler("question two", 300));
    g.tool_step("call_2", &filler("file two", 2000));
    g.model(vec![text(&filler("answer two", 400))]);
    g.turn_end();
    let pruned = g.prune(r1);
    g.turn_start(&filler("question three", 300));
    g.model(vec![text(&filler("answer three", 300))]);
    g.turn_end();
    let checkpoint = g.compact(3);
    g.turn_start(&filler("question four", 300));
    g.model(vec![text(&filler("answer four", 300))]);
    g.turn_end();
    g.system = filler("a new system prompt", 1200);
    g.header("change");
    g.turn_start(&filler("question five", 300));
    g.model(vec![text(&filler("answer five", 300))]);
    g.turn_end();
    (r1, pruned, checkpoint)
}

fn cache_json(env: &TestEnv, args: &[&str]) -> J {
    let stdout = crate::support::stdout_ok(
        env.dsh()
            .arg("cache")
            .arg("--json")
            .args(args)
            .output()
            .unwrap(),
    );
    serde_json::from_str(&stdout).unwrap()
}

/// Invariants every report holds.
fn check_invariants(v: &J) {
    for r in v["requests"].as_array().unwrap() {
        let prompt = r["promptTokens"].as_u64().unwrap();
        let hit = r["predictedHit"].as_u64().unwrap();
        let miss = r["predictedMiss"].as_u64().unwrap();
        assert_eq!(hit + miss, prompt, "hit + miss = prompt: {r}");
        if let Some(p) = r["firstChanged"]["tokens"].as_u64() {
            assert!(p <= prompt, "position within the prompt: {r}");
            let b = r["firstChanged"]["blockTokens"].as_u64().unwrap();
            assert!(b >= p && b <= prompt, "block start within the prompt: {r}");
        }
        if r["cause"]["kind"] == "append" {
            assert_eq!(
                r["recomputedTokens"], 0,
                "an append recomputes nothing: {r}"
            );
        }
        for k in ["prune", "compaction"] {
            if r["cause"]["kind"] == k {
                assert_eq!(r["firstChanged"]["segment"], "node", "{r}");
                assert_eq!(r["firstChanged"]["seq"], r["cause"]["seq"], "{r}");
            }
        }
    }
}

#[test]
fn predictions_equal_what_a_prefix_unit_provider_reported() {
    let mut probe = Gen::new(None);
    scripted(&mut probe);
    let n = probe.requests.len();
    let provider = Provider::start(n);
    let mut g = Gen::new(Some(provider.base.clone()));
    let (_, pruned, checkpoint) = scripted(&mut g);
    drop(provider);
    let env = TestEnv::new();
    let log = g.write(env.home(), "session.jsonl");
    let v = cache_json(&env, &[log.to_str().unwrap()]);
    check_invariants(&v);
    let reqs = v["requests"].as_array().unwrap();
    assert_eq!(reqs.len(), n);
    let mut some_hit = false;
    for (r, (seq, prompt, hit, _)) in reqs.iter().zip(&g.requests) {
        assert_eq!(r["seq"], *seq);
        assert_eq!(r["promptTokens"], *prompt, "prompt size at seq {seq}");
        assert_eq!(
            r["predictedHit"], *hit,
            "predicted hit = reported cacheReadTokens at seq {seq}: {r}"
        );
        assert_eq!(r["reported"]["cacheReadTokens"].as_f64(), Some(*hit as f64));
        some_hit |= *hit > 0;
    }
    assert!(some_hit, "the session hits the cache somewhere");
    // The prune: the first changed position is the pruned result's position.
    let (i, r) = reqs
        .iter()
        .enumerate()
        .find(|(_, r)| r["cause"]["kind"] == "prune")
        .expect("a request missed because of the prune");
    assert_eq!(r["cause"]["seq"], pruned);
    let at = g.requests[i]
        .3
        .iter()
        .find(|(s, _)| *s == pruned)
        .unwrap()
        .1;
    assert_eq!(r["firstChanged"]["tokens"], at);
    // …down to the block: the tool result's first content item.
    let b = &r["firstChanged"]["block"];
    assert_eq!(b["part"], "content", "{r}");
    assert_eq!(b["index"], 0);
    assert_eq!(b["type"], "tool-result");
    assert_eq!(b["resultContent"], 0);
    assert_eq!(r["firstChanged"]["blockTokens"], at);
    assert!(r["recomputedTokens"].as_u64().unwrap() > 0);
    // The compaction: the position of the first shadowed node (the head,
    // right after system and tools).
    let (i, r) = reqs
        .iter()
        .enumerate()
        .find(|(_, r)| r["cause"]["kind"] == "compaction")
        .expect("a request missed because of the compaction");
    assert_eq!(r["cause"]["seq"], checkpoint);
    let head = g.requests[i - 1].3[0].1;
    assert_eq!(r["firstChanged"]["tokens"], head);
    assert_eq!(r["firstChanged"]["blockTokens"], head);
    assert_eq!(r["firstChanged"]["block"]["index"], 0);
    assert_eq!(r["firstChanged"]["block"]["type"], "text");
    // The system prompt change falls inside the system part.
    let last = reqs.last().unwrap();
    assert_eq!(last["cause"]["kind"], "header:system");
    assert_eq!(last["firstChanged"]["segment"], "system");
    assert_eq!(last["firstChanged"]["block"]["part"], "system");
    let system_end = q(&g.system) + 4;
    let at = last["firstChanged"]["blockTokens"].as_u64().unwrap();
    assert!(at < system_end, "inside the system part: {last}");
    assert_eq!(last["headerChanges"], json!(["system"]));
    // Replacements: the prune's next request recomputed it; the compaction
    // carries its summariser usage.
    let reps = v["replacements"].as_array().unwrap();
    let p = reps.iter().find(|x| x["seq"] == pruned).unwrap();
    assert_eq!(p["kind"], "prune");
    assert!(p["recomputedTokens"].as_u64().unwrap() > 0);
    assert!(p["savedTokens"].as_f64().unwrap() > 0.0);
    let c = reps.iter().find(|x| x["seq"] == checkpoint).unwrap();
    assert_eq!(c["kind"], "compaction");
    assert_eq!(c["summary"]["tokens"], 1364.0);
    assert!(
        v["note"]
            .as_str()
            .unwrap()
            .contains("not the provider's bill")
    );
    // Costs from a dated price entry of the config, checked by hand.
    let cfg = env.home().join("prices.toml");
    std::fs::write(
        &cfg,
        "[[prices]]\nprovider = \"deepseek-official\"\nmodel = \"deepseek-v4-flash\"\nfrom = \"2026-05-01\"\ninput = 2\ncacheHit = 0.5\noutput = 8\n",
    )
    .unwrap();
    let v = cache_json(
        &env,
        &["--config", cfg.to_str().unwrap(), log.to_str().unwrap()],
    );
    let reps = v["replacements"].as_array().unwrap();
    let c = reps.iter().find(|x| x["seq"] == checkpoint).unwrap();
    let rec = c["recomputedTokens"].as_f64().unwrap();
    let close = |a: &J, b: f64| (a.as_f64().unwrap() - b).abs() < 1e-12;
    assert!(close(&c["cost"]["recompute"], rec * 1.5 / 1e6), "{c}");
    // (300 × 2 + 1024 × 0.5 + 40 × 8) / 1e6
    assert!(close(&c["cost"]["summary"], 0.001432), "{c}");
    let saved = c["savedTokens"].as_f64().unwrap();
    assert!(close(&c["cost"]["saved"], saved * 0.5 / 1e6), "{c}");
    let miss: f64 = v["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["cause"]["kind"] == "prune")
        .map(|r| r["predictedMiss"].as_f64().unwrap())
        .sum();
    let by = v["totals"]["byCause"].as_array().unwrap();
    let p = by.iter().find(|b| b["cause"] == "prune").unwrap();
    assert!(close(&p["missCostUsd"], miss * 2.0 / 1e6), "{p}");
    // A model the table does not know: tokens, and no cost.
    let mut u = Gen::new(None);
    u.provider = "nowhere";
    scripted(&mut u);
    let log = u.write(env.home(), "unpriced.jsonl");
    let v = cache_json(&env, &[log.to_str().unwrap()]);
    assert!(
        v["replacements"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["cost"].is_null())
    );
}

#[test]
fn anthropic_predictions_equal_what_a_breakpoint_provider_reported() {
    let mut probe = Gen::new(None);
    probe.provider = "anthropic";
    scripted(&mut probe);
    let provider = Provider::start_as(probe.requests.len(), true);
    let mut g = Gen::new(Some(provider.base.clone()));
    g.provider = "anthropic";
    g.layout = vec![("last", "5m")];
    scripted(&mut g);
    drop(provider);
    let env = TestEnv::new();
    let log = g.write(env.home(), "anthropic.jsonl");
    let v = cache_json(
        &env,
        &["--anthropic-breakpoints", "last", log.to_str().unwrap()],
    );
    check_invariants(&v);
    let mut some_hit = false;
    let reqs = v["requests"].as_array().unwrap();
    for ((r, (seq, _, hit, _)), (w5, w1)) in reqs.iter().zip(&g.requests).zip(&g.writes) {
        assert_eq!(r["rule"], "anthropic");
        assert_eq!(r["predictedHit"], *hit, "read at seq {seq}: {r}");
        assert_eq!(
            r["predicted"]["anthropic"]["write5m"], *w5,
            "at seq {seq}: {r}"
        );
        assert_eq!(
            r["predicted"]["anthropic"]["write1h"], *w1,
            "at seq {seq}: {r}"
        );
        some_hit |= *hit > 0;
    }
    assert!(some_hit);
    // DSH's adapters send no breakpoint: by default nothing is predicted.
    let v = cache_json(&env, &[log.to_str().unwrap()]);
    assert!(
        v["requests"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["predictedHit"] == 0 && r["predicted"]["anthropic"]["write"] == 0)
    );
}

/// Request indexes of interest in [`scripted_anthropic`].
struct Marks {
    compaction: usize,
    system: usize,
    tools: usize,
    wide: usize,
    refreshed: usize,
    idle: usize,
    long_idle: usize,
}

/// A session for Anthropic's cache on `claude-sonnet-4-5`: tools and a
/// system prompt each past the 1,024-token minimum, tool steps, a prune, a
/// compaction, a system-prompt change, a tools change, three turns 4
/// minutes apart then a prune early in the prompt (only entries refreshed
/// by every read are still live), a step whose 22 parallel tool results put
/// the previous breakpoint out of the 20-block lookback, an idle gap of 10
/// minutes (past 5-minute entries, inside 1-hour ones) and one of 2 hours,
/// all on real times.
fn scripted_anthropic(g: &mut Gen) -> Marks {
    g.provider = "anthropic";
    g.model = "claude-sonnet-4-5";
    g.system = filler("system", 6000);
    let tool = |name: &str| json!({"name": name, "description": filler(name, 1500), "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}});
    g.tools = json!([tool("read"), tool("grep"), tool("edit")]);
    g.turn_start(&filler("question one", 600));
    let r1 = g.tool_step("call_1", &filler("file one", 3000));
    g.model(vec![text(&filler("answer one", 500))]);
    g.turn_end();
    g.turn_start(&filler("question two", 300));
    let r2 = g.tool_step("call_2", &filler("file two", 2000));
    g.model(vec![text(&filler("answer two", 400))]);
    g.turn_end();
    g.prune(r1);
    g.turn_start(&filler("question three", 300));
    g.model(vec![text(&filler("answer three", 300))]);
    g.turn_end();
    g.compact(3);
    g.turn_start(&filler("question four", 300));
    let compaction = g.requests.len();
    g.model(vec![text(&filler("answer four", 300))]);
    g.turn_end();
    g.system = filler("a new system prompt", 6000);
    g.header("change");
    g.turn_start(&filler("question five", 300));
    let system = g.requests.len();
    g.model(vec![text(&filler("answer five", 300))]);
    g.turn_end();
    g.turn_start(&filler("question six", 300));
    g.model(vec![text(&filler("answer six", 300))]);
    g.turn_end();
    g.tools[2] = tool("write");
    g.header("change");
    g.turn_start(&filler("question seven", 300));
    let tools = g.requests.len();
    g.model(vec![text(&filler("answer seven", 300))]);
    g.turn_end();
    for t in ["a", "b", "c"] {
        g.time += 4 * 60_000;
        g.turn_start(&filler(&format!("question {t}"), 300));
        g.model(vec![text(&filler(&format!("answer {t}"), 300))]);
        g.turn_end();
    }
    g.prune(r2);
    g.turn_start(&filler("question after the prune", 300));
    let refreshed = g.requests.len();
    g.model(vec![text(&filler("answer after the prune", 300))]);
    g.turn_end();
    // 22 tool calls at once: the next request is 23 blocks past the last
    // breakpoint of the one before.
    g.turn_start(&filler("question eight", 300));
    let calls: Vec<J> = (0..22)
        .map(|i| json!({"type": "tool-call", "id": format!("p{i}"), "name": "read", "arguments": format!("{{\"path\":\"p{i}\"}}")}))
        .collect();
    g.model(calls);
    for i in 0..22 {
        let call = format!("p{i}");
        let c = g.ev(
            "tool/call",
            json!({"turn": g.turn, "step": g.step, "callId": call, "name": "read", "arguments": "{}"}),
            None,
            None,
        );
        let m = json!({"id": format!("r-{call}"), "role": "user", "content": [{"type": "tool-result", "toolCallId": call, "content": [text(&filler(&call, 200))], "isError": false}], "source": {"kind": "tool", "callId": call}});
        let data = json!({"turn": g.turn, "step": g.step, "message": m.clone()});
        g.append("tool/result", data, m, Some(vec![c]));
    }
    g.step_end();
    g.step_start();
    let wide = g.requests.len();
    g.model(vec![text(&filler("answer eight", 300))]);
    g.turn_end();
    g.turn_start(&filler("question nine", 300));
    g.model(vec![text(&filler("answer nine", 300))]);
    g.turn_end();
    g.time += 10 * 60_000;
    g.turn_start(&filler("question ten", 300));
    let idle = g.requests.len();
    g.model(vec![text(&filler("answer ten", 300))]);
    g.turn_end();
    g.turn_start(&filler("question eleven", 300));
    g.model(vec![text(&filler("answer eleven", 300))]);
    g.turn_end();
    g.time += 2 * 3_600_000;
    g.turn_start(&filler("question twelve", 300));
    let long_idle = g.requests.len();
    g.model(vec![text(&filler("answer twelve", 300))]);
    g.turn_end();
    Marks {
        compaction,
        system,
        tools,
        wide,
        refreshed,
        idle,
        long_idle,
    }
}

#[test]
fn anthropic_layouts_and_ttls_equal_what_the_provider_reported_request_by_request() {
    let env = TestEnv::new();
    let close = |a: &J, b: f64| (a.as_f64().unwrap() - b).abs() < 1e-12;
    // Sonnet 4.5 in the built-in table: 3 input, 0.30 hit, 3.75 for
    // 5-minute writes, 6 for 1-hour writes (USD per million tokens).
    let (input, hit_rate, w5_rate, w1_rate) = (3.0, 0.3, 3.75, 6.0);
    let layouts: [&[(&str, &str)]; 4] = [
        &[("last", "5m")],
        &[("tools", "1h"), ("system", "1h"), ("last", "5m")],
        &[
            ("system", "1h"),
            ("first-user", "1h"),
            ("prev-user", "5m"),
            ("last", "5m"),
        ],
        &[
            ("tools", "5m"),
            ("system", "5m"),
            ("prev-user", "5m"),
            ("last", "5m"),
        ],
    ];
    let tool = |name: &str| json!({"name": name, "description": filler(name, 1500), "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}});
    let mut hits_at = Vec::new();
    for (n, layout) in layouts.iter().enumerate() {
        let mut probe = Gen::new(None);
        probe.layout = layout.to_vec();
        scripted_anthropic(&mut probe);
        let provider = Provider::start_as(probe.requests.len(), true);
        let mut g = Gen::new(Some(provider.base.clone()));
        g.layout = layout.to_vec();
        let marks = scripted_anthropic(&mut g);
        drop(provider);
        let log = g.write(env.home(), &format!("layout{n}.jsonl"));
        let spec: Vec<String> = layout.iter().map(|(p, t)| format!("{p}:{t}")).collect();
        let spec = spec.join(",");
        let v = cache_json(
            &env,
            &["--anthropic-breakpoints", &spec, log.to_str().unwrap()],
        );
        check_invariants(&v);
        assert_eq!(v["timesReal"], true);
        assert_eq!(v["rule"]["anthropic"]["breakpoints"], spec);
        let reqs = v["requests"].as_array().unwrap();
        assert_eq!(reqs.len(), g.requests.len());
        let (mut sum_write, mut sum_total) = (0.0, 0.0);
        for ((r, (seq, prompt, hit, _)), (w5, w1)) in reqs.iter().zip(&g.requests).zip(&g.writes) {
            let what = format!("layout {spec}, request at seq {seq}: {r}");
            assert_eq!(r["rule"], "anthropic", "{what}");
            assert_eq!(r["promptTokens"], *prompt, "{what}");
            assert_eq!(r["predictedHit"], *hit, "read: {what}");
            let a = &r["predicted"]["anthropic"];
            assert_eq!(a["write5m"], *w5, "5-minute writes: {what}");
            assert_eq!(a["write1h"], *w1, "1-hour writes: {what}");
            assert_eq!(a["write"], *w5 + *w1, "{what}");
            assert!(hit + w5 + w1 <= *prompt, "{what}");
            // The cost of each request, by hand from the table's rates.
            let uncached = (prompt - hit - w5 - w1) as f64;
            let c = &r["predictedCost"];
            let write = (*w5 as f64 * w5_rate + *w1 as f64 * w1_rate) / 1e6;
            assert!(close(&c["hit"], *hit as f64 * hit_rate / 1e6), "{what}");
            assert!(close(&c["write"], write), "{what}");
            assert!(close(&c["uncached"], uncached * input / 1e6), "{what}");
            assert_eq!(c["currency"], "USD");
            sum_write += write;
            sum_total += c["total"].as_f64().unwrap();
        }
        let t = &v["totals"];
        let w5s: u64 = g.writes.iter().map(|w| w.0).sum();
        let w1s: u64 = g.writes.iter().map(|w| w.1).sum();
        assert_eq!(t["predictedWrite5m"], w5s);
        assert_eq!(t["predictedWrite1h"], w1s);
        assert!((t["predictedCost"]["write"].as_f64().unwrap() - sum_write).abs() < 1e-9);
        assert!((t["predictedCost"]["total"].as_f64().unwrap() - sum_total).abs() < 1e-9);
        let hit = |i: usize| reqs[i]["predictedHit"].as_u64().unwrap();
        // Anthropic's order: a system-prompt change starts after the tools
        // (the first ones; the script changes them later).
        let tools_tokens = q(&json!([tool("read"), tool("grep"), tool("edit")]).to_string()) + 4;
        let s = &reqs[marks.system];
        assert_eq!(s["cause"]["kind"], "header:system", "{s}");
        assert_eq!(s["firstChanged"]["tokens"], tools_tokens, "{s}");
        // A tools change invalidates everything.
        let t = &reqs[marks.tools];
        assert_eq!(t["cause"]["kind"], "header:tools", "{t}");
        assert_eq!(t["firstChanged"]["tokens"], 0, "{t}");
        assert_eq!(hit(marks.tools), 0, "{t}");
        // Two hours idle: every entry has expired.
        assert_eq!(reqs[marks.long_idle]["cause"]["kind"], "idle");
        assert_eq!(hit(marks.long_idle), 0);
        // Ten minutes idle: past 5-minute entries.
        assert_eq!(reqs[marks.idle]["cause"]["kind"], "idle");
        assert_eq!(
            reqs[marks.idle]["idle"]["gapMs"].as_u64().unwrap() / 60_000,
            10
        );
        // The compaction's recompute, split as the next request writes it.
        let rep = v["replacements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["kind"] == "compaction")
            .unwrap();
        assert_eq!(rep["nextRequest"], marks.compaction);
        let rec = rep["recomputedTokens"].as_f64().unwrap();
        let r5 = rep["recomputedWrite5m"].as_f64().unwrap();
        let r1 = rep["recomputedWrite1h"].as_f64().unwrap();
        assert!(rec > 0.0 && r5 + r1 <= rec, "{rep}");
        let want_write = (r5 * (w5_rate - hit_rate) + r1 * (w1_rate - hit_rate)) / 1e6;
        assert!(close(&rep["cost"]["recomputeWrite"], want_write), "{rep}");
        assert!(
            close(
                &rep["cost"]["recompute"],
                want_write + (rec - r5 - r1) * (input - hit_rate) / 1e6
            ),
            "{rep}"
        );
        assert_eq!(reqs[marks.refreshed]["cause"]["kind"], "prune");
        hits_at.push((
            hit(marks.system),
            hit(marks.idle),
            hit(marks.wide),
            r5 + r1 == rec,
            hit(marks.refreshed),
        ));
    }
    let system_tokens = q(&filler("a new system prompt", 6000)) + 4;
    let tools_tokens = q(&json!([tool("read"), tool("grep"), tool("edit")]).to_string()) + 4;
    // `last` alone: a system change, an idle gap past 5 minutes and a step
    // past the lookback each read nothing.
    assert_eq!(hits_at[0].0, 0);
    assert_eq!(hits_at[0].1, 0);
    assert_eq!(hits_at[0].2, 0);
    // tools:1h first: the system change still reads the tools, and after
    // ten idle minutes the 1-hour tools and system entries still live.
    assert_eq!(hits_at[1].0, tools_tokens);
    let new_tools = q(&json!([tool("read"), tool("grep"), tool("write")]).to_string()) + 4;
    assert_eq!(hits_at[1].1, new_tools + system_tokens);
    // first-user reaches back where the last breakpoint's window cannot.
    assert!(hits_at[2].2 > 0);
    // Under a 5-minute-only layout the idle request reads nothing, but
    // reads refresh: twelve minutes after they were written, the tools and
    // system entries read every four minutes are still there.
    assert_eq!(hits_at[3].1, 0);
    assert_eq!(hits_at[3].4, new_tools + system_tokens);
    // With a breakpoint on the last message, every recomputed token is
    // written again.
    assert!(hits_at.iter().all(|h| h.3));
}

#[test]
fn anthropic_layouts_are_validated_and_come_from_the_flag_or_the_config() {
    let mut g = Gen::new(None);
    g.provider = "anthropic";
    g.model = "claude-sonnet-4-5";
    g.turn_start(&filler("q", 400));
    g.model(vec![text("a")]);
    g.turn_end();
    let env = TestEnv::new();
    let log = g.write(env.home(), "small.jsonl");
    let l = log.to_str().unwrap();
    let refused = |args: &[&str], says: &str| {
        let out = env.dsh().arg("cache").args(args).arg(l).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    };
    refused(
        &[
            "--anthropic-breakpoints",
            "tools,system,first-user,prev-user,last",
        ],
        "at most 4",
    );
    refused(
        &["--anthropic-breakpoints", "tools,system:1h"],
        "longer TTLs before shorter",
    );
    refused(&["--anthropic-breakpoints", "last,last"], "twice");
    refused(
        &["--anthropic-breakpoints", "middle"],
        "unknown breakpoint place",
    );
    refused(&["--anthropic-breakpoints", "last:10m"], "5m and 1h");
    refused(&["--anthropic-breakpoints", "none,last"], "none");
    refused(&["--anthropic-ttl", "10m"], "possible values: 5m, 1h");
    // Places without a TTL take --anthropic-ttl; the layout is canonical.
    let v = cache_json(
        &env,
        &[
            "--anthropic-ttl",
            "1h",
            "--anthropic-breakpoints",
            "last:5m, tools",
            l,
        ],
    );
    let a = &v["rule"]["anthropic"];
    assert_eq!(a["breakpoints"], "tools:1h,last:5m");
    assert_eq!(
        a["layout"],
        json!([{"at": "tools", "ttl": "1h", "ttlMs": 3600000}, {"at": "last", "ttl": "5m", "ttlMs": 300000}])
    );
    // The config's [cache] gives the default; the flag wins over it.
    let cfg = env.home().join("cache.toml");
    std::fs::write(
        &cfg,
        "[cache]\nanthropicBreakpoints = \"last, system:1h, tools:1h\"\n",
    )
    .unwrap();
    let c = cfg.to_str().unwrap();
    let v = cache_json(&env, &["--config", c, l]);
    assert_eq!(
        v["rule"]["anthropic"]["breakpoints"],
        "tools:1h,system:1h,last:5m"
    );
    let v = cache_json(&env, &["--config", c, "--anthropic-breakpoints", "none", l]);
    assert_eq!(v["rule"]["anthropic"]["breakpoints"], "none");
    std::fs::write(
        &cfg,
        "[cache]\nanthropicBreakpoints = \"tools,system:1h\"\n",
    )
    .unwrap();
    refused(&["--config", c], "anthropicBreakpoints");
    std::fs::write(&cfg, "[cache]\nlayout = \"last\"\n").unwrap();
    refused(&["--config", c], "unknown key");
}

#[test]
fn an_append_only_log_recomputes_nothing() {
    let mut g = Gen::new(None);
    for t in 0..3 {
        g.turn_start(&filler(&format!("q{t}"), 400));
        g.tool_step(&format!("c{t}"), &filler("out", 800));
        g.model(vec![text(&filler("done", 200))]);
        g.turn_end();
    }
    let env = TestEnv::new();
    let log = g.write(env.home(), "append.jsonl");
    let v = cache_json(&env, &[log.to_str().unwrap()]);
    check_invariants(&v);
    let reqs = v["requests"].as_array().unwrap();
    assert_eq!(reqs[0]["cause"]["kind"], "first");
    for r in &reqs[1..] {
        assert_eq!(r["cause"]["kind"], "append", "{r}");
        assert_eq!(r["recomputedTokens"], 0);
        // What the previous request left (its prompt and output) is hit,
        // in whole blocks.
        let fresh = r["freshTokens"].as_u64().unwrap();
        let miss = r["predictedMiss"].as_u64().unwrap();
        assert!(miss >= fresh && miss < fresh + 128, "{r}");
    }
    assert!(v["replacements"].as_array().unwrap().is_empty());
    // Times are real here; without --lifetime nothing expires.
    assert_eq!(v["timesReal"], true);
    assert!(reqs[1]["idle"]["gapMs"].as_u64().unwrap() > 0);
    // With a lifetime shorter than the gaps every entry has expired.
    let v = cache_json(&env, &["--lifetime", "1s", log.to_str().unwrap()]);
    let reqs = v["requests"].as_array().unwrap();
    assert!(reqs[1..].iter().all(|r| r["cause"]["kind"] == "idle"));
    assert!(reqs.iter().all(|r| r["predictedHit"] == 0));
}

#[test]
fn normalised_times_make_idle_gaps_unknown() {
    let mut g = Gen::new(None);
    g.turn_start("hello");
    g.model(vec![text("hi")]);
    g.turn_end();
    g.turn_start("again");
    g.model(vec![text("hi again")]);
    g.turn_end();
    // Times jump backwards, as recorded snapshot logs do.
    let lines: Vec<String> = g
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut v: J = serde_json::from_str(l).unwrap();
            if i > 0 {
                v["time"] = json!(if i % 2 == 0 { 5 } else { 0 });
            }
            v.to_string()
        })
        .collect();
    let env = TestEnv::new();
    let p = env.home().join("norm.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let v = cache_json(&env, &["--lifetime", "1s", p.to_str().unwrap()]);
    assert_eq!(v["timesReal"], false);
    let r = &v["requests"][1];
    assert_eq!(r["idle"], "unknown");
    assert_eq!(r["cause"]["kind"], "append", "never a guessed expiry");
}

#[test]
fn many_logs_print_one_envelope_and_causes_group() {
    let env = TestEnv::new();
    let mut paths = Vec::new();
    for n in 0..2 {
        let mut g = Gen::new(None);
        scripted(&mut g);
        paths.push(g.write(env.home(), &format!("s{n}.jsonl")));
    }
    let a: Vec<&str> = paths.iter().map(|p| p.to_str().unwrap()).collect();
    let v = cache_json(&env, &a);
    assert_eq!(v["logs"].as_array().unwrap().len(), 2);
    assert_eq!(v["summary"]["logs"], 2);
    assert_eq!(v["schema_version"], 1);
    let causes: Vec<&str> = v["summary"]["totals"]["byCause"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cause"].as_str().unwrap())
        .collect();
    for k in ["prune", "compaction", "header:system", "append", "first"] {
        assert!(causes.contains(&k), "{k} in {causes:?}");
    }
    // The readable report says plainly it is not a bill.
    let out = env.dsh().arg("cache").arg(&paths[0]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("not the provider's bill"), "{text}");
    assert!(text.contains("prune at seq"), "{text}");
    let out = env
        .dsh()
        .args(["cache", "--by", "cause"])
        .arg(&paths[0])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("header:system"));
}

#[test]
fn genlog_logs_with_compactions_and_prunes_hold_the_properties() {
    let Some(shared) = shared("genlog_logs_with_compactions_and_prunes_hold_the_properties") else {
        return;
    };
    let env = TestEnv::new();
    let out = env.home().join("gen.jsonl");
    let st = std::process::Command::new(shared.join("tools/genlog"))
        .args(["--events", "4000", "--seed", "11", "--compactions", "2"])
        .args(["--prune-passes", "2", "--restarts", "1", "-o"])
        .arg(&out)
        .status();
    let Ok(st) = st else {
        eprintln!("SKIPPED: genlog did not run");
        return;
    };
    assert!(st.success());
    for args in [vec![], vec!["--tokenizer", "o200k"]] {
        let mut a: Vec<&str> = args.clone();
        a.push(out.to_str().unwrap());
        let v = cache_json(&env, &a);
        check_invariants(&v);
        let kinds: Vec<String> = v["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["cause"]["kind"].as_str().unwrap().to_string())
            .collect();
        assert!(kinds.iter().any(|k| k == "compaction"), "{kinds:?}");
        let reps = v["replacements"].as_array().unwrap();
        assert!(reps.iter().any(|r| r["kind"] == "prune"));
        assert!(reps.iter().any(|r| r["kind"] == "compaction"));
    }
}

#[test]
fn a_generation_3_system_head_rewrite_is_a_system_change() {
    let Some(shared) = shared("a_generation_3_system_head_rewrite_is_a_system_change") else {
        return;
    };
    let env = TestEnv::new();
    let p = shared.join("spec/examples/v3-system-head-image-offload.jsonl");
    let v = cache_json(&env, &["-q", p.to_str().unwrap()]);
    check_invariants(&v);
    let r = &v["requests"][1];
    assert_eq!(r["cause"]["kind"], "header:system", "{r}");
    assert_eq!(r["firstChanged"]["position"], 0);
    // A new prompt is a header change, as in G0, not a replacement that
    // saves or costs tokens.
    assert!(
        v["replacements"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["kind"] != "system-head"),
        "{}",
        v["replacements"]
    );
}

#[test]
fn an_image_offload_changes_the_node_it_names() {
    let t = |i: u64| 1_767_225_600_000u64 + i;
    let img = json!({"type": "image", "attachment": {"attachmentId": format!("sha256:{}", "ab".repeat(32)), "mediaType": "image/png", "bytes": 20481, "width": 640, "height": 480}});
    let header = json!({"header": {"config": {"provider": "deepseek-official", "model": "deepseek-v4-flash"}}, "reason": "initial"});
    let assistant = |id: &str, turn: u64| json!({"turn": turn, "step": 1, "message": {"id": id, "role": "assistant", "content": [text("ok")], "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}}, "stream": []});
    let evs = vec![
        json!({"type": "turn/start", "data": {"turn": 1}}),
        json!({"type": "step/start", "data": {"turn": 1, "step": 1}}),
        json!({"type": "system/message", "data": {"turn": 1, "step": 1, "message": {"id": "s1", "role": "system", "content": [text("You are careful.")], "source": {"kind": "plugin", "plugin": "p"}}}, "surfaceOp": "append"}),
        json!({"type": "user/message", "data": {"id": "u1", "role": "user", "content": [text("look"), img], "source": {"kind": "user"}}, "surfaceOp": "append"}),
        json!({"type": "request/header", "data": header}),
        json!({"type": "assistant/message", "data": assistant("a1", 1), "surfaceOp": "append"}),
        json!({"type": "step/end", "data": {"turn": 1, "step": 1}}),
        json!({"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}}),
        json!({"type": "turn/start", "data": {"turn": 2}}),
        json!({"type": "step/start", "data": {"turn": 2, "step": 1}}),
        json!({"type": "user/message", "data": {"id": "u2", "role": "user", "content": [text("again")], "source": {"kind": "user"}}, "surfaceOp": "append"}),
        json!({"type": "image/offload", "data": {"targets": [{"seq": 3, "imageIndexes": [0]}]}}),
        json!({"type": "assistant/message", "data": assistant("a2", 2), "surfaceOp": "append"}),
        json!({"type": "step/end", "data": {"turn": 2, "step": 1}}),
        json!({"type": "turn/end", "data": {"turn": 2, "reason": {"kind": "completed"}}}),
    ];
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": "g3-offload", "createdAt": t(0), "isSeeded": false, "delegationDepth": 0}).to_string(),
    ];
    for (i, mut e) in evs.into_iter().enumerate() {
        let obj = e.as_object_mut().unwrap();
        obj.insert("seq".into(), json!(i));
        obj.insert("time".into(), json!(t(i as u64 + 1)));
        lines.push(e.to_string());
    }
    let env = TestEnv::new();
    let p = env.home().join("g3.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let v = cache_json(&env, &[p.to_str().unwrap()]);
    check_invariants(&v);
    let r = &v["requests"][1];
    assert_eq!(r["cause"]["kind"], "image-offload", "{r}");
    assert_eq!(r["cause"]["seq"], 11);
    assert_eq!(r["firstChanged"]["seq"], 3);
}

#[test]
fn a_route_change_is_a_different_cache_and_a_restart_alone_changes_nothing() {
    let mut g = Gen::new(None);
    g.turn_start(&filler("q1", 800));
    g.model(vec![text(&filler("a1", 400))]);
    g.turn_end();
    // A restart: the harness marks the new lifecycle and logs the same header.
    g.ev("session/end-seed", json!({}), None, None);
    g.header("resume");
    g.turn_start(&filler("q2", 300));
    g.model(vec![text(&filler("a2", 300))]);
    g.turn_end();
    // Another model.
    let h = json!({"header": {"config": {"provider": "deepseek-official", "model": "deepseek-v4-pro"}, "system": g.system, "tools": g.tools}, "reason": "change"});
    g.ev("request/header", h, None, None);
    g.turn_start(&filler("q3", 300));
    g.model(vec![text(&filler("a3", 300))]);
    g.turn_end();
    let env = TestEnv::new();
    let p = g.write(env.home(), "route.jsonl");
    let v = cache_json(&env, &[p.to_str().unwrap()]);
    check_invariants(&v);
    let r = v["requests"].as_array().unwrap();
    assert_eq!(r[1]["cause"]["kind"], "append", "{}", r[1]);
    assert!(r[1]["predictedHit"].as_u64().unwrap() > 0);
    assert_eq!(r[2]["cause"]["kind"], "route");
    assert_eq!(r[2]["cause"]["to"], "deepseek-official/deepseek-v4-pro");
    assert_eq!(r[2]["firstChanged"]["tokens"], 0);
    assert_eq!(r[2]["predictedHit"], 0);
}

#[test]
fn the_first_change_is_located_to_the_block_and_the_tool_schema() {
    let mut g = Gen::new(None);
    g.tools = json!([
        {"name": "read", "description": "Read a file", "parameters": {"type": "object"}},
        {"name": "grep", "description": "Search", "parameters": {"type": "object"}}
    ]);
    g.turn_start(&filler("q1", 400));
    g.model(vec![
        text("let me look"),
        json!({"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}),
        json!({"type": "tool-call", "id": "c2", "name": "grep", "arguments": "{}"}),
    ]);
    // One tool result with two content items; the second is then pruned.
    let (first, second) = (filler("head", 600), filler("tail", 2000));
    let m = json!({"id": "r1", "role": "user", "content": [{"type": "tool-result", "toolCallId": "c1", "content": [text(&first), text(&second)], "isError": false}], "source": {"kind": "tool", "callId": "c1"}});
    let data = json!({"turn": g.turn, "step": g.step, "message": m.clone()});
    let r = g.append("tool/result", data, m.clone(), None);
    g.model(vec![text("seen")]);
    g.turn_end();
    let mut new = m.clone();
    new["content"][0]["content"][1] = text("[pruned]");
    g.ev(
        "compaction/prune",
        json!({"shadowedRange": {"start": r, "end": r}, "shadowedSeqs": [r], "shadowedTokenCount": message_price(&m)}),
        None,
        None,
    );
    let data = json!({"turn": 1, "step": 1, "message": new.clone()});
    let pruned = g.ev(
        "tool/result",
        data,
        Some(json!({"op": "replace", "start": r, "end": r})),
        Some(vec![r]),
    );
    let pos = g.surface.iter().position(|(s, _)| *s == r).unwrap();
    g.surface[pos] = (pruned, new);
    g.turn_start("next");
    g.model(vec![text("ok")]);
    g.turn_end();
    // A change to the second tool schema only.
    g.tools[1]["description"] = json!("Search the tree");
    g.header("change");
    g.turn_start("again");
    g.model(vec![text("ok")]);
    g.turn_end();
    let env = TestEnv::new();
    let log = g.write(env.home(), "blocks.jsonl");
    for tok in [None, Some("o200k"), Some("cl100k")] {
        let mut a = vec![];
        if let Some(t) = tok {
            a.extend(["--tokenizer", t]);
        }
        a.push(log.to_str().unwrap());
        let v = cache_json(&env, &a);
        check_invariants(&v);
        let reqs = v["requests"].as_array().unwrap();
        let p = reqs.iter().find(|r| r["cause"]["kind"] == "prune").unwrap();
        let fc = &p["firstChanged"];
        assert_eq!(fc["seq"], pruned, "{p}");
        assert_eq!(fc["block"]["type"], "tool-result");
        assert_eq!(fc["block"]["resultContent"], 1, "{p}");
        let start = fc["tokens"].as_u64().unwrap();
        let at = fc["blockTokens"].as_u64().unwrap();
        if tok.is_none() {
            // The heuristic: the first item's text + its block overhead.
            assert_eq!(at - start, q(&first) + 4, "{p}");
            let i = reqs
                .iter()
                .position(|r| r["cause"]["kind"] == "prune")
                .unwrap();
            let node = g.requests[i]
                .3
                .iter()
                .find(|(s, _)| *s == pruned)
                .unwrap()
                .1;
            assert_eq!(start, node);
        } else {
            assert!(
                at > start,
                "exact counts still place the second item later: {p}"
            );
        }
        let h = reqs.last().unwrap();
        assert_eq!(h["cause"]["kind"], "header:tools", "{h}");
        assert_eq!(h["firstChanged"]["block"]["part"], "tools");
        assert_eq!(h["firstChanged"]["block"]["tool"], "grep");
        // An append starts at the first block of the first new node; the
        // second request's output had tool calls.
        let a = &reqs[1]["firstChanged"];
        assert_eq!(a["block"]["index"], 0, "{a}");
    }
}

impl Gen {
    /// A G0 attempt that fails: `chunks` chunks (a text block) before its
    /// `finish` with `code`; no assistant/message.
    fn failed_attempt(&mut self, streamed: bool, code: &str) {
        if !self.header_logged {
            self.header("initial");
        }
        let (turn, step) = (self.turn, self.step);
        if streamed {
            self.block_start();
            self.ev(
                "assistant/chunk",
                json!({"turn": turn, "step": step, "chunk": {"type": "text-delta", "index": 0, "text": "Partial"}}),
                None,
                None,
            );
        }
        self.ev(
            "assistant/chunk",
            json!({"turn": turn, "step": step, "chunk": {"type": "finish", "reason": {"kind": "error", "failure": {"message": "failed", "code": code}}}}),
            None,
            None,
        );
        self.ev(
            "llm/retry",
            json!({"retryId": "r", "turn": turn, "step": step, "provider": self.provider, "mode": "normal", "policyKey": "k", "retry": 1, "maxRetries": 2, "delayMs": 0, "failure": {"message": "failed", "code": code}}),
            None,
            None,
        );
        self.ev(
            "llm/retry-started",
            json!({"retryId": "r", "turn": turn, "step": step, "retry": 1}),
            None,
            None,
        );
    }
}

#[test]
fn failed_attempts_the_provider_received_are_requests() {
    let mut g = Gen::new(None);
    g.turn_start(&filler("q1", 1200));
    // Streamed, then failed: the provider read the prompt.
    g.failed_attempt(true, "SERVER");
    g.model(vec![text(&filler("a1", 400))]);
    g.turn_end();
    g.turn_start(&filler("q2", 600));
    // Refused before any answer: not a request.
    g.failed_attempt(false, "RATE_LIMIT");
    // An empty answer: only a provider that processed the prompt says so.
    g.failed_attempt(false, "EMPTY_RESPONSE");
    g.model(vec![text(&filler("a2", 400))]);
    g.turn_end();
    let env = TestEnv::new();
    let log = g.write(env.home(), "failed.jsonl");
    let v = cache_json(&env, &[log.to_str().unwrap()]);
    check_invariants(&v);
    let r = v["requests"].as_array().unwrap();
    assert_eq!(r.len(), 4, "{r:?}");
    assert_eq!(r[0]["failed"]["code"], "SERVER");
    assert_eq!(r[0]["cause"]["kind"], "first");
    assert!(r[1]["failed"].is_null());
    assert_eq!(r[2]["failed"]["code"], "EMPTY_RESPONSE");
    assert!(r[3]["failed"].is_null());
    assert_eq!(v["attemptsNotSent"], 1);
    assert_eq!(v["totals"]["failedRequests"], 2);
    // The retry hits the prompt the failed attempt left (whole blocks).
    let p1 = r[1]["promptTokens"].as_u64().unwrap();
    assert_eq!(r[0]["promptTokens"], p1);
    assert_eq!(r[1]["cause"]["kind"], "append");
    assert_eq!(r[1]["predictedHit"], p1 / 128 * 128);
    // A failed attempt leaves no output unit: the request after the empty
    // answer hits its input, not more.
    let p2 = r[2]["promptTokens"].as_u64().unwrap();
    assert_eq!(r[3]["predictedHit"], p2 / 128 * 128);
    let out = env.dsh().arg("cache").arg(&log).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("failed SERVER"), "{text}");
    assert!(text.contains("2 counted as requests"), "{text}");
}

#[test]
fn a_change_across_a_new_lifecycle_with_no_other_reason_is_the_lifecycle() {
    // Lifecycle 1: the model's attempt begins (its first chunk fixes its
    // prompt), then a message lands on the surface before the reply is
    // logged; the process ends. Lifecycle 2 resumes: its first request holds
    // that message *before* the reply, so the prompt differs from what the
    // last request left, and nothing logged but the new lifecycle explains it.
    let mut g = Gen::new(None);
    g.turn_start(&filler("q1", 1200));
    g.header("initial");
    g.block_start();
    let m = json!({"id": "inj", "role": "user", "content": [text(&filler("steer", 300))], "source": {"kind": "user"}});
    let injected = g.append("user/message", m.clone(), m, None);
    g.model(vec![text(&filler("a1", 400))]);
    g.turn_end();
    let seed = g.ev("session/end-seed", json!({}), None, None);
    g.header("resume");
    g.turn_start(&filler("q2", 300));
    g.model(vec![text(&filler("a2", 300))]);
    g.turn_end();
    let env = TestEnv::new();
    let log = g.write(env.home(), "lifecycle.jsonl");
    let v = cache_json(&env, &[log.to_str().unwrap()]);
    check_invariants(&v);
    let r = &v["requests"][1];
    assert_eq!(r["cause"]["kind"], "lifecycle", "{r}");
    assert_eq!(r["cause"]["seq"], seed);
    assert_eq!(r["firstChanged"]["seq"], injected);
    assert!(r["recomputedTokens"].as_u64().unwrap() > 0);
    // The first request's prompt is still hit up to the change.
    let at = r["firstChanged"]["tokens"].as_u64().unwrap();
    assert_eq!(r["predictedHit"], at / 128 * 128, "{r}");
    let out = env.dsh().arg("cache").arg(&log).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("new lifecycle after end-seed"), "{text}");
}

#[test]
fn calibrate_rescales_token_figures_by_the_reported_prompt_ratio() {
    let mut g = Gen::new(None);
    scripted(&mut g);
    // The provider counted 1.5× what dsh computes: rewrite every usage.
    let lines: Vec<String> = g
        .lines
        .iter()
        .map(|l| {
            let mut v: J = serde_json::from_str(l).unwrap();
            if v["type"] == "assistant/message" {
                let u = &mut v["data"]["usage"];
                let p = u["inputTokens"].as_f64().unwrap() + u["cacheReadTokens"].as_f64().unwrap();
                u["inputTokens"] = json!(p * 1.5);
                u["cacheReadTokens"] = json!(0);
            }
            v.to_string()
        })
        .collect();
    let env = TestEnv::new();
    let log = env.home().join("scaled.jsonl");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let plain = cache_json(&env, &[log.to_str().unwrap()]);
    assert!(plain["calibrated"].is_null(), "unscaled by default");
    let v = cache_json(&env, &["--calibrate", log.to_str().unwrap()]);
    check_invariants(&v);
    let k = v["calibrated"].as_f64().unwrap();
    assert!((k - 1.5).abs() < 1e-9, "{k}");
    let s = |x: &J| (x.as_f64().unwrap() * k).round() as u64;
    for (a, b) in plain["requests"]
        .as_array()
        .unwrap()
        .iter()
        .zip(v["requests"].as_array().unwrap())
    {
        assert_eq!(b["promptTokens"].as_u64().unwrap(), s(&a["promptTokens"]));
        if !a["firstChanged"].is_null() {
            assert_eq!(
                b["firstChanged"]["tokens"].as_u64().unwrap(),
                s(&a["firstChanged"]["tokens"])
            );
        }
        // DeepSeek hits stay whole blocks.
        assert_eq!(b["predictedHit"].as_u64().unwrap() % 128, 0);
        assert_eq!(b["reported"], a["reported"], "reported figures untouched");
    }
    assert!(
        (v["totals"]["calibration"].as_f64().unwrap() - 1.0).abs() < 0.01,
        "after rescaling, dsh's prompt sizes match the reported ones"
    );
    let out = env
        .dsh()
        .args(["cache", "--calibrate"])
        .arg(&log)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("calibrated: token figures rescaled by 1.50×"),
        "{shown}"
    );
    // A log without usage stays unscaled, and says nothing about it.
    let mut u = Gen::new(None);
    u.turn_start("hi");
    u.model(vec![text("hello")]);
    u.turn_end();
    let mut lines = u.lines.clone();
    for l in &mut lines {
        let mut v: J = serde_json::from_str(l).unwrap();
        if v["type"] == "assistant/message" {
            v["data"].as_object_mut().unwrap().remove("usage");
        }
        *l = v.to_string();
    }
    let p = env.home().join("nousage.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let v = cache_json(&env, &["--calibrate", p.to_str().unwrap()]);
    assert!(v["calibrated"].is_null());
}

#[test]
fn a_fork_starts_on_its_parents_cache_and_its_seed_is_counted_once() {
    let mut g = Gen::new(None);
    g.turn_start(&filler("parent question", 1500));
    g.model(vec![text(&filler("parent answer", 600))]);
    g.turn_end();
    let env = TestEnv::new();
    let parent = g.write(env.home(), "parent.jsonl");
    // The child: the parent's events as its seed, the cut marker, its own turn.
    let cut = g.seq;
    g.lines[0] = json!({"type":"session","version":0,"id":"cache-child","createdAt":1780000000000u64,"cwd":"/work","parentSession":"cache-test","seedLength":cut,"origin":"subagent","delegationDepth":1}).to_string();
    g.ev("session/end-seed", json!({}), None, None);
    g.header("resume");
    g.turn_start(&filler("child task", 300));
    g.model(vec![text("child done")]);
    g.turn_end();
    let child = g.write(env.home(), "child.jsonl");
    let v = cache_json(&env, &[child.to_str().unwrap()]);
    check_invariants(&v);
    let r = v["requests"].as_array().unwrap();
    assert_eq!(r[0]["inherited"], true);
    assert_eq!(r[1]["inherited"], false);
    assert_eq!(r[1]["cause"]["kind"], "fork", "{}", r[1]);
    assert_eq!(r[1]["cause"]["parent"], "cache-test");
    // It hits what the parent's request persisted (its prompt and output).
    let at = r[1]["firstChanged"]["tokens"].as_u64().unwrap();
    assert_eq!(r[1]["predictedHit"], at / 128 * 128);
    assert!(at > 0);
    assert_eq!(
        v["totals"]["requests"], 1,
        "the seed's request is the parent's"
    );
    // Parent and child together: every request once.
    let v = cache_json(&env, &[parent.to_str().unwrap(), child.to_str().unwrap()]);
    assert_eq!(v["summary"]["totals"]["requests"], 2);
    let causes: Vec<&str> = v["summary"]["totals"]["byCause"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cause"].as_str().unwrap())
        .collect();
    assert!(causes.contains(&"fork"), "{causes:?}");
    let out = env.dsh().arg("cache").arg(&child).output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("fork of cache-test"), "{shown}");
}

impl Gen {
    /// Text deltas of the open step's block 0 as one packed row, `dts[i]`
    /// ms after the one before (the first at the generator's clock).
    fn deltas(&mut self, texts: &[&str], dts: &[i64]) {
        assert_eq!(dts.len() + 1, texts.len());
        let (turn, step) = (self.turn, self.step);
        let time0 = self.time as i64;
        self.lines.push(
            json!({"type": "text-chunks", "seq0": self.seq, "time0": time0, "data": {"turn": turn, "step": step, "index": 0, "dt": dts, "texts": texts}})
                .to_string(),
        );
        self.seq += texts.len() as u64;
        self.time = (time0 + dts.iter().sum::<i64>()) as u64 + 1000;
    }

    fn block_start(&mut self) {
        let (turn, step) = (self.turn, self.step);
        self.ev(
            "assistant/chunk",
            json!({"turn": turn, "step": step, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}}),
            None,
            None,
        );
    }
}

/// The cache report of a log whose deltas are packed rows is the report of
/// the same log with each chunk on a line of its own: an attempt abandoned
/// after a row is a request at the row's last chunk, and a row whose times
/// go back, or end after the event after it, makes the times unusable, as
/// the same chunks one by one do.
#[test]
fn packed_rows_give_the_report_their_chunks_give_one_by_one() {
    let env = TestEnv::new();
    let mut reports = Vec::new();
    // In order; going back; in order but ending after the event after it.
    let cases: [[i64; 3]; 3] = [[40, 25, 10], [40, -25, 10], [40, 25, 86_400_000]];
    for (i, dts) in cases.into_iter().enumerate() {
        let mut g = Gen::new(None);
        g.turn_start(&filler("q1", 900));
        g.header("initial");
        // An attempt streams, then is abandoned for a new step.
        g.block_start();
        let before = g.time;
        g.deltas(&["Par", "tial ", "answ", "er"], &dts);
        if i == 2 {
            g.time = before + 1000;
        }
        g.step_start();
        g.model(vec![text(&filler("a1", 400))]);
        g.turn_end();
        let packed = g.write(env.home(), &format!("rows-{i}-packed.jsonl"));
        let lines = env.home().join(format!("rows-{i}-lines.jsonl"));
        let text = std::fs::read_to_string(&packed).unwrap();
        std::fs::write(&lines, rows_one_by_one(&text)).unwrap();
        for log in [packed, lines] {
            let mut v = cache_json(&env, &[log.to_str().unwrap()]);
            check_invariants(&v);
            v.as_object_mut().unwrap().remove("file");
            reports.push(v);
        }
    }
    for (i, pair) in reports.chunks(2).enumerate() {
        assert_eq!(pair[0], pair[1], "case {i}: packed ≠ one by one");
    }
    let r = reports[0]["requests"].as_array().unwrap();
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0]["failed"]["code"], "unfinished");
    assert_eq!(reports[0]["timesReal"], true);
    assert_eq!(reports[2]["timesReal"], false);
    assert_eq!(reports[4]["timesReal"], false);
}

/// Issue 42: one provider account, one prefix cache, several sessions. A
/// loopback DeepSeek-like provider (prefix units, keyed by content, kept
/// across sessions) serves four sessions that share a system prompt and
/// tools: B asks A's first question again, C a new one, D another. `dsh
/// cache` over the four predicts every request's hit exactly as the
/// provider reported it: B's first request hits A's prompt, D's the system
/// prompt and tools C revealed as a common prefix; alone, each first
/// request is a miss, and the report says what one log cannot see.
#[test]
fn sessions_sharing_a_system_prompt_hit_each_others_prefixes() {
    let turn = |g: &mut Gen, q: &str| {
        g.turn_start(q);
        g.model(vec![text(&filler("the answer", 300))]);
        g.turn_end();
    };
    let provider = Provider::start(5);
    let base = Some(provider.base.clone());
    let mut time = 1_780_000_000_000;
    let mut session = |id: &str, questions: &[&str]| {
        let mut g = Gen::new(base.clone());
        g.lines[0] = g.lines[0].replace("\"cache-test\"", &format!("\"{id}\""));
        g.time = time;
        for q in questions {
            turn(&mut g, &filler(q, 700));
        }
        time = g.time + 120_000;
        g
    };
    let a = session("sess-a", &["question one", "question two"]);
    let b = session("sess-b", &["question one"]);
    let c = session("sess-c", &["question three"]);
    let d = session("sess-d", &["question four"]);
    drop(provider);
    let env = TestEnv::new();
    let dir = env.home().join("logs");
    std::fs::create_dir_all(&dir).unwrap();
    for (g, name) in [
        (&a, "a.jsonl"),
        (&b, "b.jsonl"),
        (&c, "c.jsonl"),
        (&d, "d.jsonl"),
    ] {
        g.write(&dir, name);
    }
    let v = cache_json(&env, &[dir.to_str().unwrap()]);
    let logs = v["logs"].as_array().unwrap();
    let of = |id: &str| logs.iter().find(|l| l["session"] == id).unwrap();
    for (g, id) in [
        (&a, "sess-a"),
        (&b, "sess-b"),
        (&c, "sess-c"),
        (&d, "sess-d"),
    ] {
        let reqs = of(id)["requests"].as_array().unwrap();
        assert_eq!(reqs.len(), g.requests.len());
        for (r, (seq, prompt, hit, _)) in reqs.iter().zip(&g.requests) {
            assert_eq!(r["promptTokens"], *prompt, "{id} seq {seq}");
            assert_eq!(r["predictedHit"], *hit, "{id} seq {seq}: {r}");
        }
    }
    let first = |id: &str| of(id)["requests"][0].clone();
    let b0 = first("sess-b");
    assert_eq!(b0["cause"]["kind"], "cross-session", "{b0}");
    assert_eq!(b0["cause"]["session"], "sess-a");
    assert_eq!(b0["crossSession"], "sess-a");
    assert_eq!(b0["predictedHit"], b.requests[0].1 / BLOCK * BLOCK);
    assert_eq!(first("sess-c")["predictedHit"], 0);
    let d0 = first("sess-d");
    assert!(d0["predictedHit"].as_u64().unwrap() > 0, "{d0}");
    assert_eq!(d0["cause"]["session"], "sess-c", "{d0}");
    assert_eq!(v["summary"]["crossSession"]["hits"], 2);
    // The lifetime is an assumption with a flag: 1 minute is too short for
    // the two minutes between sessions; 0 turns it off.
    for lt in ["1m", "0"] {
        let v = cache_json(
            &env,
            &["--cross-session-lifetime", lt, dir.to_str().unwrap()],
        );
        let b0 = &v["logs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["session"] == "sess-b")
            .unwrap()["requests"][0];
        assert_eq!(b0["predictedHit"], 0, "{lt}: {b0}");
        assert_eq!(b0["cause"]["kind"], "first");
    }
    // One log alone: its first request is a miss, and it says why.
    let one = cache_json(&env, &[dir.join("b.jsonl").to_str().unwrap()]);
    assert_eq!(one["requests"][0]["predictedHit"], 0);
    assert!(one["crossSession"].as_str().unwrap().contains("invisible"));
}

/// Logs whose system prompt is a `{{system}}` placeholder hide a head dsh
/// estimates from the first reported usage (`--tokenizer deepseek-v4`).
/// Across sessions the placeholder is no common prompt: heads of different
/// sizes are different prompts, so only a session whose estimate equals an
/// earlier one's can hit what that one left. A log whose clock runs
/// backwards cannot be placed among the others and stays on its own.
#[test]
fn placeholder_heads_of_other_sizes_and_backward_clocks_share_nothing() {
    let log = |id: &str, t0: u64, reported: u64, backwards: bool| -> String {
        let t = |k: u64| if backwards { t0 + 100 - k } else { t0 + k };
        let src =
            json!({"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"});
        let q = json!({"id": "u1", "role": "user", "content": [text("Which files changed in the last commit?")], "source": {"kind": "user"}});
        let a = json!({"id": "a1", "role": "assistant", "content": [text("Two files: src/main.rs and README.md.")], "source": src});
        [
            json!({"type": "session", "version": 0, "id": id, "createdAt": t0, "cwd": "/work", "delegationDepth": 0}),
            json!({"type": "turn/start", "seq": 0, "time": t(1), "data": {"turn": 1}}),
            json!({"type": "step/start", "seq": 1, "time": t(2), "data": {"turn": 1, "step": 1}}),
            json!({"type": "user/message", "seq": 2, "time": t(3), "data": q, "surfaceOp": "append"}),
            json!({"type": "request/header", "seq": 3, "time": t(4), "data": {"header": {"config": {"provider": "deepseek-official", "model": "deepseek-v4-flash"}, "system": "{{system}}", "tools": []}, "reason": "initial"}}),
            json!({"type": "assistant/message", "seq": 4, "time": t(5), "data": {"turn": 1, "step": 1, "message": a, "usage": {"inputTokens": reported, "outputTokens": 12, "cacheReadTokens": 0, "reasoningTokens": 0}}, "surfaceOp": "append"}),
            json!({"type": "step/end", "seq": 5, "time": t(6), "data": {"turn": 1, "step": 1}}),
            json!({"type": "turn/end", "seq": 6, "time": t(7), "data": {"turn": 1, "reason": {"kind": "completed"}}}),
        ]
        .iter()
        .map(|l| l.to_string() + "\n")
        .collect()
    };
    let env = TestEnv::new();
    let dir = env.home().join("placeholders");
    std::fs::create_dir_all(&dir).unwrap();
    let minute = 60_000;
    let t0 = 1_780_000_000_000;
    for (name, id, t, reported, backwards) in [
        ("a.jsonl", "sess-a", t0, 6000, false),
        ("b.jsonl", "sess-b", t0 + minute, 6000, false),
        ("c.jsonl", "sess-c", t0 + 2 * minute, 6300, false),
        ("d.jsonl", "sess-d", t0 + 3 * minute, 6000, true),
    ] {
        std::fs::write(dir.join(name), log(id, t, reported, backwards)).unwrap();
    }
    let v = cache_json(&env, &["--tokenizer", "deepseek-v4", dir.to_str().unwrap()]);
    let logs = v["logs"].as_array().unwrap();
    let first = |id: &str| {
        let l = logs.iter().find(|l| l["session"] == id).unwrap();
        assert!(l["hiddenPrefix"]["tokens"].as_u64().unwrap() > 5000, "{l}");
        l["requests"][0].clone()
    };
    let b = first("sess-b");
    assert_eq!(b["cause"]["kind"], "cross-session", "{b}");
    assert_eq!(b["crossSession"], "sess-a");
    assert_eq!(b["predictedHit"], 6000 / BLOCK * BLOCK, "{b}");
    for id in ["sess-c", "sess-d"] {
        let r = first(id);
        assert_eq!(r["predictedHit"], 0, "{id}: {r}");
        assert_eq!(r["cause"]["kind"], "first", "{id}: {r}");
    }
}
