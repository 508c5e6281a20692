//! The header line and the version gate (session-log §3.4).

use crate::json::{OwnedValue, Value};

use super::error::{Hint, LoadError};
use crate::generation::Generation;

/// The validated session header line (`dsh load --json`'s `header`: the
/// fields the format defines, absent ones left out).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// The header object as read (unknown keys kept for display only).
    #[serde(skip)]
    pub value: OwnedValue,
    /// Format generation, as the header's `version` number.
    pub version: u64,
    /// Format generation.
    #[serde(skip)]
    pub generation: Generation,
    /// Session id.
    pub id: String,
    /// Creation time, ms since the epoch.
    #[schemars(with = "f64")]
    pub created_at: i64,
    /// Working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub cwd: Option<String>,
    /// Parent session id (fork / subagent lineage).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub parent_session: Option<String>,
    /// Number of inherited events (fork seed; G0 and G1).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub seed_length: Option<u64>,
    /// Whether the log holds a fork's inherited prefix, cut by its last
    /// `session/end-seed {inherited:true}` (G2 and later).
    #[serde(skip)]
    pub is_seeded: Option<bool>,
    /// What started the session: `"subagent"` when created as a subagent
    /// child.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub origin: Option<String>,
    /// How deep in a delegation the session runs: 0 for top-level sessions.
    pub delegation_depth: u64,
    /// Agent preset.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub agent_preset: Option<String>,
}

/// Header keys of generations 0 and 1 (session-log §3.4): G1 refuses any
/// other, G0 (rc.8) drops them.
const G0_KEYS: [&str; 10] = [
    "type",
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "origin",
    "delegationDepth",
    "agentPreset",
];

/// Header keys of generations 2 and 3 (session-log §13.2), exactly.
const G2_KEYS: [&str; 10] = [
    "type",
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "isSeeded",
    "origin",
    "delegationDepth",
    "agentPreset",
];

/// The refusal of a `version` this reader does not decode, said as dsh.
fn unsupported_version(id: &str, ver: f64) -> LoadError {
    let ver_s = crate::json::Value::Num(ver).to_json();
    let newest = Generation::NEWEST;
    let msg = if ver > newest.number() as f64 {
        format!(
            "session \"{id}\" uses log format v{ver_s}, newer than this dsh reads (v0–{newest}): a newer DSH wrote it; update dsh to read it"
        )
    } else if ver < 0.0 {
        format!(
            "session \"{id}\" uses log format v{ver_s}, older than any this dsh reads (v0–{newest})"
        )
    } else {
        format!(
            "session \"{id}\" uses log format v{ver_s}, which is no format generation (dsh reads v0–{newest})"
        )
    };
    LoadError::unsupported(msg).line(1)
}

/// Generation 1 and later refuse header keys they do not define.
fn exact_keys(v: &Value<'_>, keys: &[&str], generation: Generation) -> Result<(), LoadError> {
    for (k, _) in v.as_obj().into_iter().flatten() {
        if !keys.iter().any(|a| k.eq_str(a)) {
            return Err(LoadError::corrupt(format!(
                "corrupt session log: the header has the key \"{}\", which format {generation} does not define",
                k.to_lossy()
            ))
            .line(1));
        }
    }
    Ok(())
}

/// The reference's refusal of a header line, with what exactly is wrong
/// as the hint (the message itself stays the reference's).
fn not_header(hint: Hint) -> LoadError {
    LoadError::corrupt("corrupt session log: first line is not a session header")
        .line(1)
        .hint(hint)
}

fn bad_field(detail: &str) -> LoadError {
    not_header(Hint::Header(format!("the header line {detail}")))
}

/// What a first line that is not a DSH header looks like: another agent's
/// transcript, recognised by the keys its lines carry.
fn foreign(v: &Value<'_>) -> Hint {
    let ty = v
        .get("type")
        .and_then(|t| t.as_str())
        .map(|t| t.into_owned());
    let has = |k: &str| v.has(k);
    let agent = if has("parentUuid")
        || (has("sessionId") && has("uuid"))
        || (ty.as_deref() == Some("summary") && has("leafUuid"))
    {
        Some("Claude Code")
    } else if matches!(
        ty.as_deref(),
        Some("session_meta" | "response_item" | "event_msg" | "turn_context")
    ) || (has("instructions") && has("id") && has("timestamp"))
    {
        Some("Codex")
    } else if has("projectID") || has("sessionID") {
        Some("OpenCode")
    } else {
        None
    };
    match (agent, ty) {
        (Some(a), _) => Hint::ForeignTranscript(a),
        (None, Some(t)) => Hint::Header(format!(
            "the first line is a \"{t}\" record; a DSH log starts with {{\"type\":\"session\",…}}"
        )),
        (None, None) if v.is_obj() => Hint::Header(
            "the first line has no \"type\"; a DSH log starts with {\"type\":\"session\",…}".into(),
        ),
        (None, None) => Hint::Header(
            "the first line is not a JSON object; a DSH log starts with {\"type\":\"session\",…}"
                .into(),
        ),
    }
}

pub(crate) fn is_neg_zero(v: &Value<'_>) -> bool {
    matches!(v, Value::Num(n) if *n == 0.0 && n.is_sign_negative())
}

/// Versions this reader does not decode are refused before any shape
/// check (so their message names the version).
fn version_gate(v: &Value<'_>) -> Result<(), LoadError> {
    if let Some(Value::Num(ver)) = v.get("version")
        && v.is_obj()
        && *ver != 0.0
    {
        let id = v
            .get("id")
            .and_then(|i| i.as_str())
            .unwrap_or_default()
            .into_owned();
        let decoded =
            ver.fract() == 0.0 && *ver > 0.0 && *ver <= Generation::NEWEST.number() as f64;
        if !decoded {
            return Err(unsupported_version(&id, *ver));
        }
    }
    Ok(())
}

/// `createdAt`: whole milliseconds since 1970, 0 or more.
fn created_at(v: &Value<'_>) -> Result<i64, LoadError> {
    let bad_created =
        || bad_field("needs \"createdAt\" as whole milliseconds since 1970, 0 or more");
    let created = v
        .get("createdAt")
        .ok_or_else(|| bad_field("has no \"createdAt\""))?;
    if is_neg_zero(created) {
        return Err(bad_created());
    }
    created
        .as_safe_int()
        .filter(|n| *n >= 0)
        .ok_or_else(bad_created)
}

/// `delegationDepth`: a whole number, 0 or more; 0 with a warning when
/// missing and `lenient`.
fn delegation_depth(
    v: &Value<'_>,
    lenient: bool,
    warnings: &mut Vec<String>,
) -> Result<u64, LoadError> {
    let bad_depth = || bad_field("needs \"delegationDepth\" as a whole number, 0 or more");
    match v.get("delegationDepth") {
        Some(d) if !is_neg_zero(d) => d.as_count().ok_or_else(bad_depth),
        Some(_) => Err(bad_depth()),
        None if lenient => {
            warnings.push("header has no delegationDepth; assumed 0 (--lenient)".to_string());
            Ok(0)
        }
        None => Err(not_header(Hint::Lenient(
            "the header has no \"delegationDepth\" (older harnesses did not write it)".into(),
        ))),
    }
}

/// Parse and check the header line. `lenient` defaults a missing
/// `delegationDepth` to 0; the returned warnings say so. The checks run in
/// the reference's order: the first that fails chooses the message.
pub(crate) fn parse_header(
    line: &[u8],
    lenient: bool,
) -> Result<(SessionHeader, Vec<String>), LoadError> {
    let text = String::from_utf8_lossy(line);
    let v = Value::parse(&text).map_err(|_| {
        LoadError::corrupt("corrupt session log: header line is not valid JSON").line(1)
    })?;
    let mut warnings = Vec::new();
    // Version gate before shape checks.
    version_gate(&v)?;
    if !v.is_obj() || !v.get("type").is_some_and(|t| t.is_str("session")) {
        return Err(not_header(foreign(&v)));
    }
    let version = match v.get("version") {
        Some(Value::Num(n)) => *n,
        Some(_) => return Err(bad_field("has a \"version\" that is not a number")),
        None => return Err(bad_field("has no \"version\"")),
    };
    // The gate above let through only versions this reader decodes.
    let generation = Generation::of_version(version as u64).unwrap_or(Generation::V0);
    match generation {
        Generation::V0 => {}
        Generation::V1 => exact_keys(&v, &G0_KEYS, generation)?,
        _ => exact_keys(&v, &G2_KEYS, generation)?,
    }
    let id = match v.get("id") {
        Some(Value::Str(s)) => s.to_lossy().into_owned(),
        Some(_) => return Err(bad_field("has an \"id\" that is not a string")),
        None => return Err(bad_field("has no \"id\"")),
    };
    let created_at = created_at(&v)?;
    let delegation_depth = delegation_depth(&v, lenient, &mut warnings)?;
    let origin = match v.get("origin") {
        None => None,
        Some(o) if o.is_str("subagent") => Some("subagent".to_string()),
        Some(_) => return Err(bad_field("has an \"origin\" other than \"subagent\"")),
    };
    let agent_preset = match v.get("agentPreset") {
        None => None,
        Some(Value::Str(s)) => Some(s.to_lossy().into_owned()),
        Some(_) => return Err(bad_field("has an \"agentPreset\" that is not a string")),
    };
    if v.has("sandboxMode") || v.has("approvalPolicy") {
        return Err(
            LoadError::corrupt("session header uses retired policy baseline fields").line(1),
        );
    }
    // Construction-time checks.
    let fail = |m: String| {
        Err(LoadError::invalid(format!(
            "stored session \"{id}\" failed validation: Error: {m}"
        ))
        .line(1))
    };
    let cwd = match v.get("cwd") {
        None => None,
        Some(Value::Str(s)) => {
            let c = s.to_lossy().into_owned();
            if !c.starts_with('/') {
                return fail(format!(
                    "session header cwd must be an absolute path, got \"{c}\""
                ));
            }
            Some(c)
        }
        Some(_) => return fail("session header cwd must be a string".into()),
    };
    let parent_session = match v.get("parentSession") {
        None => None,
        Some(Value::Str(s)) => Some(s.to_lossy().into_owned()),
        Some(_) => return fail("session header parentSession must be a string".into()),
    };
    let seed_length = match v.get("seedLength") {
        None => None,
        Some(s) => match s.as_count() {
            Some(n) => Some(n),
            None => return fail("session header seedLength must be a count".into()),
        },
    };
    let is_seeded = if generation.embedded_streams() {
        match v.get("isSeeded") {
            Some(Value::Bool(b)) => Some(*b),
            _ => {
                return Err(LoadError::corrupt(format!(
                    "corrupt session log: a {generation} header needs a boolean \"isSeeded\""
                ))
                .line(1));
            }
        }
    } else {
        None
    };
    Ok((
        SessionHeader {
            value: v.to_owned_value(),
            version: version as u64,
            generation,
            id,
            created_at,
            cwd,
            parent_session,
            seed_length,
            is_seeded,
            delegation_depth,
            origin,
            agent_preset,
        },
        warnings,
    ))
}
