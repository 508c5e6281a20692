//! §7.1 / §7.2: the load-boundary checks are the loader's refusals. The loader
//! stops at the first; this maps its refusal to the check it broke, by the
//! [`LoadRule`] the loader names (the message text is read only for errors
//! built without one).

use super::CheckId;
use crate::log::{LoadError, LoadErrorKind, LoadRule};

/// The check for a rule the loader names.
fn check_of_rule(rule: LoadRule) -> CheckId {
    match rule {
        LoadRule::SeqGap => CheckId::Surf1,
        LoadRule::Retired => CheckId::Env2,
        LoadRule::RequestHeader => CheckId::Env3,
        LoadRule::MessageShape => CheckId::Env4,
        LoadRule::Envelope => CheckId::Env1,
        LoadRule::UnknownType => CheckId::Log3,
        LoadRule::Surface("R1" | "R2" | "R3" | "R4") => CheckId::Surf2,
        LoadRule::Surface("R5" | "R6" | "R7" | "R8" | "R9") => CheckId::Surf3,
        LoadRule::Surface("R10" | "R11" | "R12" | "R13") => CheckId::Surf4,
        LoadRule::Surface(_) => CheckId::Surf5,
        _ => CheckId::Log2,
    }
}

/// The check a loader refusal corresponds to.
pub(crate) fn classify_refusal(e: &LoadError) -> CheckId {
    let m = e.message.as_str();
    match e.kind {
        LoadErrorKind::Io | LoadErrorKind::NotFound | LoadErrorKind::Limit => return CheckId::Log1,
        LoadErrorKind::Unsupported => return CheckId::Log3,
        _ => {}
    }
    if let Some(rule) = e.rule {
        return check_of_rule(rule);
    }
    if m.contains("seq gap") || m.contains("is not contiguous") {
        return CheckId::Surf1;
    }
    if m.contains("unsupported legacy") {
        return CheckId::Env2;
    }
    if m.contains("seed request/header at index") {
        return CheckId::Env3;
    }
    // Per-event validation: "... invalid seed event at index N: <why>".
    if let Some((_, why)) = m.split_once("invalid seed event at index ")
        && let Some((_, why)) = why.split_once(": ")
    {
        return classify_event_rule(why);
    }
    CheckId::Log2
}

/// V-MTR-3 beside a V-SURF-4 refusal: a replace whose range is not on the
/// surface is also a range the token meter cannot price (the meter prices the
/// loader's surface, so the loader's refusal is the meter's replay error).
pub(crate) fn replace_range_refusal(e: &LoadError) -> Option<String> {
    if let Some(rule) = e.rule
        && !matches!(rule, LoadRule::Surface("R10" | "R11" | "R12"))
    {
        return None;
    }
    let (_, why) = e.message.split_once("invalid seed event at index ")?;
    let (_, why) = why.split_once(": ")?;
    let why = why.strip_prefix("surface replace: ")?;
    if !(why.ends_with("not found in surface") || why.contains(" is after end seq ")) {
        return None;
    }
    Some(match e.at.seq {
        Some(s) => format!("token surface: replace at seq {s} has invalid current range ({why})"),
        None => format!("token surface: replace has invalid current range ({why})"),
    })
}

/// The check for one per-event validation message.
fn classify_event_rule(why: &str) -> CheckId {
    const ENVELOPE: [&str; 7] = [
        "event is not an object",
        "unknown envelope key",
        "event type must",
        "event seq must",
        "event time must",
        "event data is missing",
        "ignorable must",
    ];
    if ENVELOPE.iter().any(|p| why.contains(p)) {
        return CheckId::Env1;
    }
    if why.contains("tool/result surface replacement") {
        return CheckId::Surf5;
    }
    if why.contains("surface replace") {
        return CheckId::Surf4;
    }
    if why.contains("cannot carry")
        || why.contains("requires surfaceOp")
        || why.contains("invalid surfaceOp")
    {
        return CheckId::Surf2;
    }
    if why.contains("sourceEventSeqs") {
        return CheckId::Surf3;
    }
    if why.contains("message") || why.contains("source") || why.contains("block") {
        return CheckId::Env4;
    }
    CheckId::Log2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(why: &str) -> CheckId {
        classify_refusal(&LoadError::invalid(format!(
            "stored session \"s\" failed validation: Error: invalid seed event at index 4: {why}"
        )))
    }

    #[test]
    fn maps_every_loader_rule() {
        assert_eq!(
            invalid("event has unknown envelope key \"x\""),
            CheckId::Env1
        );
        assert_eq!(invalid("event time must be a safe integer"), CheckId::Env1);
        assert_eq!(
            invalid("user/message message id must be a non-empty string"),
            CheckId::Env4
        );
        assert_eq!(
            invalid("tool/result source must be {kind:\"tool\", callId}"),
            CheckId::Env4
        );
        assert_eq!(
            invalid("compaction/start is not a surface event type and cannot carry surfaceOp"),
            CheckId::Surf2
        );
        assert_eq!(invalid("user/message requires surfaceOp"), CheckId::Surf2);
        assert_eq!(invalid("invalid surfaceOp {\"op\":\"x\"}"), CheckId::Surf2);
        assert_eq!(invalid("sourceEventSeqs repeats seq 3"), CheckId::Surf3);
        assert_eq!(
            invalid("sourceEventSeqs member 9 is not earlier than seq 4"),
            CheckId::Surf3
        );
        assert_eq!(
            invalid("surface replace: end seq 12 not found in surface"),
            CheckId::Surf4
        );
        assert_eq!(
            invalid("surface replace must cite shadowed seq 2 in sourceEventSeqs"),
            CheckId::Surf4
        );
        assert_eq!(
            invalid("tool/result surface replacement may change only content"),
            CheckId::Surf5
        );
        let gap = LoadError::corrupt(
            "corrupt session log: seq gap in committed region at line 15 (expected 14, got 15)",
        );
        assert_eq!(classify_refusal(&gap), CheckId::Surf1);
        let header = LoadError::corrupt("corrupt session log: first line is not a session header");
        assert_eq!(classify_refusal(&header), CheckId::Log2);
        let legacy = LoadError::invalid(
            "stored session \"s\" failed validation: Error: session \"s\" contains unsupported legacy request/header-delta event at seq 3",
        );
        assert_eq!(classify_refusal(&legacy), CheckId::Env2);
        let ad = LoadError::invalid(
            "stored session \"s\" failed validation: Error: seed request/header at index 3 has invalid adapterDefaults",
        );
        assert_eq!(classify_refusal(&ad), CheckId::Env3);
        assert_eq!(
            classify_refusal(&LoadError::unsupported("uses log format v1")),
            CheckId::Log3
        );
        assert_eq!(
            classify_refusal(&LoadError::new(LoadErrorKind::Io, "cannot open")),
            CheckId::Log1
        );
    }

    #[test]
    fn the_loaders_rule_decides_not_the_wording() {
        // A message that would read as a sourceEventSeqs problem, but the
        // loader says it broke R13 (a replace must cite what it shadows).
        let e = LoadError::invalid("… sourceEventSeqs …").rule(LoadRule::Surface("R13"));
        assert_eq!(classify_refusal(&e), CheckId::Surf4);
        let e = LoadError::corrupt("anything").rule(LoadRule::SeqGap);
        assert_eq!(classify_refusal(&e), CheckId::Surf1);
        let e = LoadError::invalid("surface replace: x").rule(LoadRule::Surface("R13"));
        assert_eq!(replace_range_refusal(&e), None);
    }

    #[test]
    fn range_refusals_are_also_the_meters() {
        let refusal = |why: &str| {
            LoadError::invalid(format!(
                "stored session \"s\" failed validation: Error: invalid seed event at index 7: {why}"
            ))
            .at(crate::log::Location {
                line: Some(9),
                seq: Some(7),
            })
        };
        assert_eq!(
            replace_range_refusal(&refusal("surface replace: end seq 12 not found in surface"))
                .as_deref(),
            Some(
                "token surface: replace at seq 7 has invalid current range (end seq 12 not found in surface)"
            )
        );
        assert_eq!(
            replace_range_refusal(&refusal(
                "surface replace: start seq 5 is after end seq 3 in surface"
            ))
            .as_deref(),
            Some(
                "token surface: replace at seq 7 has invalid current range (start seq 5 is after end seq 3 in surface)"
            )
        );
        // Citing rules and other refusals are not range errors.
        assert_eq!(
            replace_range_refusal(&refusal(
                "surface replace must cite shadowed seq 2 in sourceEventSeqs"
            )),
            None
        );
        assert_eq!(
            replace_range_refusal(&refusal("user/message requires surfaceOp")),
            None
        );
    }
}
