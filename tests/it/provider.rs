//! The loopback provider for the compaction tests: a loopback HTTP server that replays scripted provider replies (DeepSeek
//! chat-completions SSE, Anthropic Messages SSE, errors, stalls, cut
//! streams) and records the requests it received. Bounded: it serves the
//! scripted replies, one connection each, and stops by itself (at the latest
//! after 60 s).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Captured {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Captured {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 `text/event-stream`, the given SSE body, connection close.
    Sse(String),
    /// A status with headers and a JSON body.
    Status(u16, Vec<(String, String)>, String),
    /// 200 chunked SSE: send `head` as one chunk, then close without the
    /// terminating chunk (the connection is lost mid-stream).
    CutChunked(String),
    /// Accept and read the request, then say nothing for this long.
    Stall(Duration),
    /// Accept and read the request, wait until the test sets the flag (at
    /// most a minute), then answer 200 with this SSE body.
    Gated(Arc<std::sync::atomic::AtomicBool>, String),
}

pub struct Server {
    pub base: String,
    pub requests: Arc<Mutex<Vec<Captured>>>,
    handle: Option<JoinHandle<()>>,
}

pub fn read_request(s: &mut TcpStream) -> Option<Captured> {
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        let n = s.read(&mut tmp).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let first = lines.next()?;
    let mut parts = first.split(' ');
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let n = s.read(&mut tmp).ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    Some(Captured {
        method,
        path,
        headers,
        body,
    })
}

fn respond(s: &mut TcpStream, reply: &Reply) {
    let _ = match reply {
        Reply::Sse(body) => write!(
            s,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}"
        ),
        Reply::Status(code, headers, body) => {
            let mut h = String::new();
            for (k, v) in headers {
                h.push_str(&format!("{k}: {v}\r\n"));
            }
            write!(
                s,
                "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{h}\r\n{body}",
                body.len()
            )
        }
        Reply::CutChunked(head) => write!(
            s,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{head}\r\n",
            head.len()
        ),
        Reply::Stall(d) => {
            std::thread::sleep(*d);
            Ok(())
        }
        Reply::Gated(go, body) => {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !go.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            write!(
                s,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}"
            )
        }
    };
    let _ = s.flush();
}

impl Server {
    pub fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let base = format!("http://{}", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let rec = requests.clone();
        let handle = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut served = 0;
            while served < replies.len() && Instant::now() < deadline {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        s.set_nonblocking(false).ok();
                        // A connection closed before any request is a
                        // reachability probe: it takes no reply.
                        if let Some(req) = read_request(&mut s) {
                            rec.lock().unwrap().push(req);
                            respond(&mut s, &replies[served]);
                            served += 1;
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server {
            base,
            requests,
            handle: Some(handle),
        }
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.requests.lock().unwrap().clone()
    }

    /// Wait for the server thread (all replies served or deadline).
    pub fn join(mut self) -> Vec<Captured> {
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.requests()
    }
}

/// DeepSeek SSE body: a reasoning delta, the text split in two deltas, a
/// stop with usage, `[DONE]`.
pub fn deepseek_sse(text: &str) -> String {
    let mid = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    let (a, b) = text.split_at(mid);
    let chunk = |delta: serde_json::Value, finish: Option<&str>, usage: bool| {
        let mut c =
            serde_json::json!({"choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
        if usage {
            c["usage"] = serde_json::json!({"prompt_tokens":3500,"completion_tokens":140,"prompt_cache_hit_tokens":3328,"prompt_cache_miss_tokens":172,"completion_tokens_details":{"reasoning_tokens":6}});
        }
        format!("data: {c}\n\n")
    };
    let mut s = String::new();
    s.push_str(&chunk(
        serde_json::json!({"role":"assistant","content":null,"reasoning_content":""}),
        None,
        false,
    ));
    s.push_str(&chunk(
        serde_json::json!({"reasoning_content":"Condense steps 1-2."}),
        None,
        false,
    ));
    s.push_str(": keep-alive\n\n");
    s.push_str(&chunk(serde_json::json!({"content":a}), None, false));
    s.push_str(&chunk(serde_json::json!({"content":b}), None, false));
    s.push_str(&chunk(
        serde_json::json!({"content":""}),
        Some("stop"),
        true,
    ));
    s.push_str("data: [DONE]\n\n");
    s
}

/// Anthropic Messages SSE body for a text reply.
pub fn anthropic_sse(text: &str) -> String {
    let ev = |name: &str, data: serde_json::Value| format!("event: {name}\ndata: {data}\n\n");
    let mut s = String::new();
    s.push_str(&ev("message_start", serde_json::json!({"type":"message_start","message":{"usage":{"input_tokens":172,"cache_read_input_tokens":3328,"output_tokens":1}}})));
    s.push_str(&ev("content_block_start", serde_json::json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})));
    s.push_str(&ev("content_block_delta", serde_json::json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"plan"}})));
    s.push_str(&ev(
        "content_block_stop",
        serde_json::json!({"type":"content_block_stop","index":0}),
    ));
    s.push_str(&ev("ping", serde_json::json!({"type":"ping"})));
    s.push_str(&ev("content_block_start", serde_json::json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})));
    s.push_str(&ev("content_block_delta", serde_json::json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":text}})));
    s.push_str(&ev(
        "content_block_stop",
        serde_json::json!({"type":"content_block_stop","index":1}),
    ));
    s.push_str(&ev("message_delta", serde_json::json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":140}})));
    s.push_str(&ev(
        "message_stop",
        serde_json::json!({"type":"message_stop"}),
    ));
    s
}
