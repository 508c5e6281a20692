//! An incremental Server-Sent Events parser (WHATWG framing).
//!
//! Bytes go in as they arrive; complete events come out. Lines end in `\n`,
//! `\r\n` or `\r`; a blank line dispatches the event; `data:` lines join with
//! `\n`; one space after the colon is dropped; lines starting with `:` are
//! comments (they only prove the connection is alive). A line is decoded as
//! UTF-8 only once it is complete, so a character split across reads is
//! never damaged.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// What a parsed line produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseItem {
    /// A complete event.
    Event(SseEvent),
    /// A comment line (keep-alive).
    Comment,
}

/// The parser state.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    /// The previous byte was `\r` (a following `\n` belongs to it).
    after_cr: bool,
    event: Option<String>,
    data: Option<String>,
}

impl SseParser {
    /// Feed bytes; complete items are pushed to `out`.
    pub(crate) fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseItem>) {
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(out);
                }
                _ => self.line.push(b),
            }
        }
    }

    /// The stream ended: a final event not followed by a blank line is still
    /// dispatched (servers commonly omit the last blank line).
    pub(crate) fn finish(&mut self, out: &mut Vec<SseItem>) {
        if !self.line.is_empty() {
            self.end_line(out);
        }
        self.dispatch(out);
    }

    fn end_line(&mut self, out: &mut Vec<SseItem>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        let text = String::from_utf8_lossy(&line);
        if text.starts_with(':') {
            out.push(SseItem::Comment);
            return;
        }
        let (field, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            "event" => self.event = Some(value.to_string()),
            _ => {} // id, retry and unknown fields are not used
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        let event = self.event.take();
        if let Some(data) = self.data.take() {
            out.push(SseItem::Event(SseEvent { event, data }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseItem> {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut out);
        }
        p.finish(&mut out);
        out
    }

    fn ev(event: Option<&str>, data: &str) -> SseItem {
        SseItem::Event(SseEvent {
            event: event.map(str::to_string),
            data: data.to_string(),
        })
    }

    #[test]
    fn frames_and_line_endings() {
        let items =
            parse_all(&[b"data: a\n\ndata:b\r\n\r\n: ping\n\nevent: x\rdata: 1\rdata: 2\r\r"]);
        assert_eq!(
            items,
            vec![
                ev(None, "a"),
                ev(None, "b"),
                SseItem::Comment,
                ev(Some("x"), "1\n2")
            ]
        );
    }

    #[test]
    fn split_anywhere_including_utf8_and_crlf() {
        let whole = "data: {\"t\":\"h\u{e9}\u{1F600}\"}\r\n\r\ndata: [DONE]\n\n".as_bytes();
        let expect = parse_all(&[whole]);
        for cut in 1..whole.len() {
            assert_eq!(
                parse_all(&[&whole[..cut], &whole[cut..]]),
                expect,
                "cut {cut}"
            );
        }
        assert_eq!(expect[0], ev(None, "{\"t\":\"h\u{e9}\u{1F600}\"}"));
    }

    #[test]
    fn final_event_without_blank_line() {
        assert_eq!(parse_all(&[b"data: [DONE]"]), vec![ev(None, "[DONE]")]);
        assert_eq!(parse_all(&[b"event: e\n"]), vec![]);
    }
}
