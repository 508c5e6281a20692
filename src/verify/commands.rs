//! The command lifecycle invariant (`dsh-commands`'s companion, which the
//! reference's verification also runs): `command/run` ids are unique and
//! every `command/done` pairs an earlier run.

use std::collections::HashSet;

use super::js::{Js, stringify};
use super::{At, CheckId, Sink};
use crate::event::{Event, Kind};

/// The companion's state: run ids seen, and which seqs are command events
/// (all a `sourceEventSeq` check needs to know about earlier events).
#[derive(Debug, Default)]
pub(crate) struct CommandTrace {
    run_ids: HashSet<String>,
    command_seqs: HashSet<u64>,
}

impl CommandTrace {
    /// Validate one event.
    pub(crate) fn observe(&mut self, ev: &Event<'_>, at: At, sink: &mut Sink) {
        match ev.kind {
            Kind::CommandRun => run(self, ev, at, sink),
            Kind::CommandDone => done(self, ev, at, sink),
            _ => return,
        }
        self.command_seqs.insert(ev.seq);
    }
}

/// V-CMD-1: a `command/run` id is not reused.
fn run(t: &mut CommandTrace, ev: &Event<'_>, at: At, sink: &mut Sink) {
    let raw = ev.data().get("commandId");
    let Some(key) = Js::of(raw).set_key() else {
        return;
    };
    if !t.run_ids.insert(key) {
        sink.emit(
            CheckId::Cmd1,
            at,
            format!("command/run repeats commandId {}", stringify(raw)),
        );
    }
}

/// V-CMD-2 / V-CMD-3: a `command/done` pairs a prior run; its
/// `sourceEventSeq` names an earlier non-command event of a success.
fn done(t: &CommandTrace, ev: &Event<'_>, at: At, sink: &mut Sink) {
    let d = ev.data();
    let raw = d.get("commandId");
    let paired = Js::of(raw)
        .set_key()
        .is_some_and(|k| t.run_ids.contains(&k));
    if !paired {
        sink.emit(
            CheckId::Cmd2,
            at,
            format!(
                "command/done {} pairs no prior command/run in this log",
                stringify(raw)
            ),
        );
    }
    let Some(source) = d.get("sourceEventSeq") else {
        return;
    };
    let success = d.get("kind").is_some_and(|k| k.is_str("success"));
    let valid = success
        && source
            .as_count()
            .is_some_and(|s| s < ev.seq && !t.command_seqs.contains(&s));
    if !valid {
        sink.emit(
            CheckId::Cmd3,
            at,
            format!(
                "command/done {} has invalid sourceEventSeq {}",
                stringify(raw),
                Js::of(Some(source)).template()
            ),
        );
    }
}
