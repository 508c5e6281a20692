//! `deriveMessages`: the model-visible messages, in surface order
//! (session-log §8). Each message is written exactly as stored.
//!
//! ```
//! let src = dsh::LogSource::File("samples/compacted.jsonl".into());
//! let log = dsh::log::load(&src, &dsh::LoadOptions::default(), &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {})?;
//! let mut roles = Vec::new();
//! dsh::derive::for_each_message(&log, &mut |_, message| {
//!     roles.push(message.get("role").and_then(|r| r.as_str()).unwrap_or_default().into_owned());
//!     Ok::<(), dsh::LoadError>(())
//! })?;
//! assert!(roles.iter().any(|r| r == "user"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::event::OwnedEvent;
use crate::log::{LoadError, LoadedLog};
use crate::surface::project;

/// Visit the derived messages in order, re-reading node events as needed.
/// `f` gets the node's event and its projected message; its own errors (a
/// failed write, say) stop the walk and come back as they are.
pub fn for_each_message<E: From<LoadError>>(
    log: &LoadedLog,
    f: &mut dyn FnMut(&OwnedEvent, &crate::json::OwnedValue) -> Result<(), E>,
) -> Result<(), E> {
    let mut file = None;
    for node in &log.surface.nodes {
        if !node.derives {
            continue;
        }
        let ev = log.read_body(&node.body, node.seq, &mut file)?;
        if let Some(m) = project(&ev) {
            f(&ev, m)?;
        }
    }
    Ok(())
}

/// Why [`write_messages_json`] stopped: the log could not be read again, or
/// the output could not be written (a reader that went away is not a bad
/// log).
#[derive(Debug, thiserror::Error)]
pub enum WriteMessagesError {
    /// Reading a node again failed.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Writing failed.
    #[error("cannot write: {0}")]
    Write(#[source] std::io::Error),
}

/// Write `deriveMessages()` as a compact JSON array, streaming.
///
/// A message whose line is exactly what `JSON.stringify` writes is copied
/// from the file as it is; any other is parsed and re-serialised. Both give
/// the same bytes.
pub fn write_messages_json(
    log: &LoadedLog,
    out: &mut dyn std::io::Write,
) -> Result<(), WriteMessagesError> {
    let io = WriteMessagesError::Write;
    out.write_all(b"[").map_err(io)?;
    let mut first = true;
    let mut buf = String::new();
    let mut line = Vec::new();
    let mut file = None;
    let mut window = log.span_window();
    // Canonical messages waiting in the window: written together, straight
    // from the window (one vectored write, no copy into a buffer).
    let mut pending: Vec<(u64, usize)> = Vec::new();
    for node in &log.surface.nodes {
        if !node.derives {
            continue;
        }
        // A canonical line's message is copied as it stands in the file.
        if let (Some((a, b)), Some(w), crate::surface::NodeBody::Span { offset, .. }) =
            (node.message_text, window.as_mut(), &node.body)
        {
            let (at, len) = (offset + a as u64, (b - a) as usize);
            if !w.holds(at, len) {
                write_pending(w, &mut pending, &mut first, out).map_err(io)?;
                w.fill(at, len)?;
            }
            pending.push((at, len));
            continue;
        }
        if let Some(w) = &window {
            write_pending(w, &mut pending, &mut first, out).map_err(io)?;
        }
        let mut write = |ev: &crate::event::Event<'_>| -> Result<(), WriteMessagesError> {
            if let Some(m) = project(ev) {
                buf.clear();
                if !first {
                    buf.push(',');
                }
                first = false;
                m.write_json(&mut buf);
                out.write_all(buf.as_bytes()).map_err(io)?;
            }
            Ok(())
        };
        // Any other line is parsed again from the same window (a second
        // reader would decompress an artifact a second time).
        if let (Some(w), crate::surface::NodeBody::Span { offset, len }) =
            (window.as_mut(), &node.body)
        {
            let len = *len as usize;
            if !w.holds(*offset, len) {
                w.fill(*offset, len)?;
            }
            let ev = crate::log::parse_node_line(w.slice(*offset, len), node.seq)?;
            write(&ev)?;
            continue;
        }
        log.with_body(&node.body, node.seq, &mut file, &mut line, |ev| write(ev))??;
    }
    if let Some(w) = &window {
        write_pending(w, &mut pending, &mut first, out).map_err(io)?;
    }
    out.write_all(b"]\n").map_err(io)?;
    Ok(())
}

/// Write the pending window ranges, comma-separated, in one vectored write.
fn write_pending(
    w: &crate::log::SpanWindow,
    pending: &mut Vec<(u64, usize)>,
    first: &mut bool,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use std::io::IoSlice;
    let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(pending.len() * 2);
    for &(at, len) in pending.iter() {
        if !*first {
            slices.push(IoSlice::new(b","));
        }
        *first = false;
        slices.push(IoSlice::new(w.slice(at, len)));
    }
    pending.clear();
    let mut bufs = &mut slices[..];
    while !bufs.is_empty() {
        match out.write_vectored(bufs) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The text an offloaded image becomes in a request when no local file path
/// is known (session-log §13.4).
pub fn offloaded_image_text(block: &crate::json::Value<'_>) -> String {
    let att = block.get("attachment");
    let id = att
        .and_then(|a| a.get("attachmentId"))
        .and_then(|i| i.as_jstr())
        .map(|s| s.to_lossy().into_owned())
        .unwrap_or_default();
    let ident = match att.and_then(|a| a.get("name")) {
        Some(n @ crate::json::Value::Str(_)) => format!("{} ({id})", n.to_json()),
        _ => id,
    };
    format!(
        "[image omitted to fit request image limits; {ident}. No local normalized image path is available; ask the user to attach it again if needed.]"
    )
}

/// The request projection of a message: every image block marked
/// `offloaded: true` (nested ones included) becomes its placeholder text block.
pub(crate) fn request_projection(msg: &crate::json::Value<'_>) -> crate::json::OwnedValue {
    use crate::json::Value;
    fn blocks(content: &Value<'_>) -> Value<'static> {
        match content.as_arr() {
            None => content.to_owned_value(),
            Some(a) => Value::Arr(
                a.iter()
                    .map(|b| {
                        let ty = b.get("type");
                        if ty.is_some_and(|t| t.is_str("image"))
                            && b.get("offloaded").is_some_and(|o| o.is_true())
                        {
                            Value::obj()
                                .with("type", "text".into())
                                .with("text", offloaded_image_text(b).into())
                        } else if ty.is_some_and(|t| t.is_str("tool-result")) && b.has("content") {
                            let mut c = b.to_owned_value();
                            c.set("content", blocks(b.get("content").unwrap()));
                            c
                        } else {
                            b.to_owned_value()
                        }
                    })
                    .collect(),
            ),
        }
    }
    let mut m = msg.to_owned_value();
    if let Some(c) = msg.get("content") {
        m.set("content", blocks(c));
    }
    m
}
