//! `deriveMessages`: the model-visible messages, in surface order
//! (session-log §8). Each message is written exactly as stored.

use crate::event::OwnedEvent;
use crate::log::{LoadError, LoadedLog};
use crate::surface::project;

/// Visit the derived messages in order, re-reading node events as needed.
/// `f` gets the node's event and its projected message.
pub fn for_each_message(
    log: &LoadedLog,
    f: &mut dyn FnMut(&OwnedEvent, &crate::json::OwnedValue) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
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

/// Write `deriveMessages()` as a compact JSON array, streaming.
pub fn write_messages_json(log: &LoadedLog, out: &mut dyn std::io::Write) -> Result<(), LoadError> {
    let io = |e: std::io::Error| {
        LoadError::new(crate::log::LoadErrorKind::Io, format!("cannot write: {e}"))
    };
    out.write_all(b"[").map_err(io)?;
    let mut first = true;
    let mut buf = String::new();
    for_each_message(log, &mut |_, m| {
        buf.clear();
        if !first {
            buf.push(',');
        }
        first = false;
        m.write_json(&mut buf);
        out.write_all(buf.as_bytes()).map_err(io)
    })?;
    out.write_all(b"]\n").map_err(io)?;
    Ok(())
}
