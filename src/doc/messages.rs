//! `dsh messages --json`: the model-visible messages, the reference's
//! `JSON.stringify(session.deriveMessages())`.

use std::borrow::Cow;
use std::cell::RefCell;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::ser::{Error as _, SerializeSeq};

use super::{Document, shape};
use crate::derive::{for_each_message, request_projection};
use crate::log::{LoadError, LoadedLog};

/// The messages the model sees, exactly as stored: byte for byte the
/// reference's `JSON.stringify(session.deriveMessages())` (or, with
/// `--request`, as the provider receives them: offloaded images as their
/// placeholder text). The one document without `schema_version`, `file`
/// or `session`: it is the harness's own shape, not dsh's.
///
/// Written message by message as the surface is read again. Without
/// `--request` the command writes it with [`crate::derive::write_messages_json`],
/// which copies canonical lines from the file without building them (a
/// test holds the two to the same bytes).
pub struct Messages<'a> {
    log: &'a LoadedLog,
    request: bool,
    /// Why a message could not be read again (serialisation stops there).
    failed: RefCell<Option<LoadError>>,
}

impl<'a> Messages<'a> {
    /// The messages of `log`, as stored or (`request`) as sent.
    pub fn of(log: &'a LoadedLog, request: bool) -> Messages<'a> {
        Messages {
            log,
            request,
            failed: RefCell::new(None),
        }
    }

    /// After a failed write: the log error that stopped it, if that was it.
    pub fn take_error(&self) -> Option<LoadError> {
        self.failed.borrow_mut().take()
    }
}

impl Serialize for Messages<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// What stopped the walk.
        enum Stop<E> {
            Load(LoadError),
            Write(E),
        }
        impl<E> From<LoadError> for Stop<E> {
            fn from(e: LoadError) -> Self {
                Stop::Load(e)
            }
        }
        let mut seq = s.serialize_seq(None)?;
        let walked = for_each_message(self.log, &mut |_, m| -> Result<(), Stop<S::Error>> {
            if self.request {
                seq.serialize_element(&request_projection(m))
            } else {
                seq.serialize_element(m)
            }
            .map_err(Stop::Write)
        });
        match walked {
            Ok(()) => seq.end(),
            Err(Stop::Write(e)) => Err(e),
            Err(Stop::Load(e)) => {
                let message = e.to_string();
                *self.failed.borrow_mut() = Some(e);
                Err(S::Error::custom(message))
            }
        }
    }
}

impl JsonSchema for Messages<'_> {
    fn schema_name() -> Cow<'static, str> {
        "Messages".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        <Vec<shape::Message>>::json_schema(generator)
    }
}

impl Document for Messages<'_> {
    const NAME: &'static str = "messages";
    const TITLE: &'static str = "dsh messages --json";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LoadOptions, LogSource};

    /// The fast writer (lines copied from the file) writes exactly the
    /// typed document, on every sample.
    #[test]
    fn the_fast_writer_writes_the_document() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
        let mut logs = Vec::new();
        for dir in [root.clone(), root.join("generations")] {
            for e in std::fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    logs.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
                } else if p.to_string_lossy().contains(".jsonl") {
                    logs.push(p);
                }
            }
        }
        assert!(logs.len() > 20);
        let mut compared = 0;
        for p in logs {
            let noop = &mut |_: &crate::Event<'_>, _: &crate::log::Folded<'_>| {};
            let Ok(log) =
                crate::log::load(&LogSource::File(p.clone()), &LoadOptions::default(), noop)
            else {
                continue;
            };
            let mut fast = Vec::new();
            crate::derive::write_messages_json(&log, &mut fast).unwrap();
            let typed = super::super::to_string(&Messages::of(&log, false)) + "\n";
            assert_eq!(String::from_utf8(fast).unwrap(), typed, "{}", p.display());
            compared += 1;
        }
        assert!(compared > 20);
    }
}
