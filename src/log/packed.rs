//! Packed chunk rows: one storage line standing for a run of consecutive
//! `assistant/chunk` delta events (session-log §3.5).

use crate::json::{JStr, MAX_SAFE, Value};

/// The three row tags and the chunk type each expands to.
fn row_chunk_type(tag: &str) -> Option<&'static str> {
    match tag {
        "text-chunks" => Some("text-delta"),
        "reasoning-chunks" => Some("reasoning-delta"),
        "tool-call-chunks" => Some("tool-call-delta"),
        _ => None,
    }
}

/// Whether a parsed line is a packed row (by its `type` tag).
pub(crate) fn is_row(v: &Value<'_>) -> bool {
    v.get("type")
        .and_then(|t| t.as_str())
        .is_some_and(|t| row_chunk_type(&t).is_some())
}

fn k(s: &'static str) -> JStr<'static> {
    JStr::from_text(s)
}

/// A validated row: where its members sit and when they happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowSpan {
    /// Seq of the first member.
    pub seq0: u64,
    /// Number of members.
    pub count: u64,
    /// Time of the first member (`time0`).
    pub first_time: i64,
    /// Time of the last member.
    pub last_time: i64,
    /// No member's time is before the one before it (every `dt` is at
    /// least 0): a reader that checks times event by event needs only the
    /// first.
    pub in_order: bool,
}

/// What the chunks of a valid row carry besides seqs and times, for readers
/// that need their content only by length (the token meter).
#[derive(Debug, Clone, PartialEq)]
pub struct RowFacts {
    /// `tool-call-chunks`: the members are tool-call deltas.
    pub tool: bool,
    /// `reasoning-chunks`: the members are reasoning deltas.
    pub reasoning: bool,
    /// `data.turn`, `data.step` and `data.index` (numbers in a valid row).
    pub turn: f64,
    /// See `turn`.
    pub step: f64,
    /// See `turn`.
    pub index: f64,
    /// UTF-16 length of `data.name` when present and not empty.
    pub name_len: Option<usize>,
    /// UTF-16 length of each member's text or arguments delta (none when
    /// the load asked for none: a run only counted).
    pub lens: Vec<u32>,
}

impl RowFacts {
    /// The facts of a row that `check` accepted.
    pub(crate) fn of(row: &Value<'_>) -> Option<RowFacts> {
        let tag = row.get("type")?.as_str()?;
        let tool = tag == "tool-call-chunks";
        let data = row.get("data")?;
        let num = |k: &str| data.get(k).and_then(|v| v.as_f64());
        let payload = data.get(if tool { "args" } else { "texts" })?.as_arr()?;
        let lens = payload
            .iter()
            .map(|p| p.as_jstr().map(|s| s.len16() as u32))
            .collect::<Option<Vec<u32>>>()?;
        Some(RowFacts {
            tool,
            reasoning: tag == "reasoning-chunks",
            turn: num("turn")?,
            step: num("step")?,
            index: num("index")?,
            name_len: data
                .get("name")
                .and_then(|n| n.as_jstr())
                .map(|n| n.len16())
                .filter(|&n| n > 0),
            lens,
        })
    }
}

/// Why a packed row is malformed (the message names the rule it breaks).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct RowError(pub String);

/// Expand a packed row into its chunk events, or say why it is malformed.
pub(crate) fn expand<'a>(row: &Value<'a>) -> Result<Vec<Value<'a>>, RowError> {
    expand_or_check(row, true).map(|(v, _)| v).map_err(RowError)
}

/// Validate a packed row exactly as [`expand`] does, without building its
/// events (for readers that need only the surface).
pub(crate) fn check(row: &Value<'_>) -> Result<RowSpan, RowError> {
    expand_or_check(row, false)
        .map(|(_, s)| s)
        .map_err(RowError)
}

/// A row's `data` has only the keys its kind allows, and all it requires.
#[inline]
fn check_data_keys(data: &Value<'_>, tool: bool, payload_key: &str) -> Result<(), String> {
    let dobj = data.as_obj().unwrap();
    let mut allowed: Vec<&str> = vec!["turn", "step", "index", "dt", payload_key];
    if tool {
        allowed.push("id");
        allowed.push("name");
    }
    for (key, _) in dobj {
        if !allowed.iter().any(|a| key.eq_str(a)) {
            return Err(format!("unexpected data key {:?}", key.to_lossy()));
        }
    }
    let required: &[&str] = if tool {
        &["turn", "step", "index", "dt", "args", "id"]
    } else {
        &["turn", "step", "index", "dt", "texts"]
    };
    for r in required {
        if !data.has(r) {
            return Err(format!("missing data.{r}"));
        }
    }
    Ok(())
}

/// A tool-call row's `data.id` and optional `data.name` (strings).
#[inline]
fn tool_id_name<'v, 'a>(
    data: &'v Value<'a>,
) -> Result<(&'v Value<'a>, Option<&'v Value<'a>>), String> {
    let id = data
        .get("id")
        .filter(|v| matches!(v, Value::Str(_)))
        .ok_or("data.id is not a string")?;
    let name = match data.get("name") {
        None => None,
        Some(n @ Value::Str(_)) => Some(n),
        Some(_) => return Err("data.name is not a string".into()),
    };
    Ok((id, name))
}

// One walk over a packed row both checks and expands it, so the check and
// the expansion can never disagree (session-log §3.5).
fn expand_or_check<'a>(row: &Value<'a>, build: bool) -> Result<(Vec<Value<'a>>, RowSpan), String> {
    let obj = row.as_obj().ok_or("row is not an object")?;
    let tag = row
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or_default()
        .into_owned();
    let chunk_type = row_chunk_type(&tag).ok_or("not a row")?;
    let tool = tag == "tool-call-chunks";
    if obj.len() != 4 || !["type", "seq0", "time0", "data"].iter().all(|k| row.has(k)) {
        return Err("packed row envelope must have exactly type, seq0, time0, data".into());
    }
    let seq0 = row
        .get("seq0")
        .and_then(|v| v.as_count())
        .ok_or("seq0 is not a count")?;
    let time0 = row
        .get("time0")
        .and_then(|v| v.as_safe_int())
        .ok_or("time0 is not a safe integer")?;
    let data = row
        .get("data")
        .filter(|d| d.is_obj())
        .ok_or("data is not an object")?;
    let payload_key = if tool { "args" } else { "texts" };
    check_data_keys(data, tool, payload_key)?;
    let turn = data.get("turn").unwrap();
    let step = data.get("step").unwrap();
    let index = data.get("index").unwrap();
    for (n, v) in [("turn", turn), ("step", step), ("index", index)] {
        if !matches!(v, Value::Num(_)) {
            return Err(format!("data.{n} is not a number"));
        }
    }
    let payload = data
        .get(payload_key)
        .and_then(|p| p.as_arr())
        .ok_or(format!("data.{payload_key} is not an array"))?;
    if payload.is_empty() || !payload.iter().all(|p| matches!(p, Value::Str(_))) {
        return Err(format!(
            "data.{payload_key} must be a non-empty array of strings"
        ));
    }
    let dt = data
        .get("dt")
        .and_then(|d| d.as_arr())
        .ok_or("data.dt is not an array")?;
    if dt.len() != payload.len() - 1 || !dt.iter().all(|d| d.is_safe_int()) {
        return Err(format!(
            "data.dt must hold {} safe integers (payload has {})",
            payload.len() - 1,
            payload.len()
        ));
    }
    let (id, name) = if tool {
        let (id, name) = tool_id_name(data)?;
        (Some(id), name)
    } else {
        (None, None)
    };
    if (seq0 + payload.len() as u64 - 1) as f64 > MAX_SAFE {
        return Err("seq range is not safe".into());
    }
    let mut out = Vec::with_capacity(if build { payload.len() } else { 0 });
    let mut t = time0;
    let mut in_order = true;
    for (i, p) in payload.iter().enumerate() {
        if i > 0 {
            let d = dt[i - 1].as_safe_int().unwrap();
            in_order &= d >= 0;
            t += d;
            if (t as f64).abs() > MAX_SAFE {
                return Err("running time is not a safe integer".into());
            }
        }
        if !build {
            continue;
        }
        let mut chunk = vec![
            (k("type"), Value::Str(k(chunk_type))),
            (k("index"), index.clone()),
        ];
        if tool {
            chunk.push((k("id"), id.unwrap().clone()));
            if let Some(n) = name {
                chunk.push((k("name"), n.clone()));
            }
            chunk.push((k("argumentsDelta"), p.clone()));
        } else {
            chunk.push((k("text"), p.clone()));
        }
        let data = Value::Obj(vec![
            (k("turn"), turn.clone()),
            (k("step"), step.clone()),
            (k("chunk"), Value::Obj(chunk)),
        ]);
        out.push(Value::Obj(vec![
            (k("type"), Value::Str(k("assistant/chunk"))),
            (k("seq"), Value::Num((seq0 + i as u64) as f64)),
            (k("time"), Value::Num(t as f64)),
            (k("data"), data),
        ]));
    }
    let span = RowSpan {
        seq0,
        count: payload.len() as u64,
        first_time: time0,
        last_time: t,
        in_order,
    };
    Ok((out, span))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_agrees_with_expand() {
        let row = r#"{"type":"tool-call-chunks","seq0":6,"time0":100,"data":{"turn":1,"step":1,"index":0,"id":"c","name":"bash","dt":[2,-1],"args":["{\"a","\":","1}"]}}"#;
        let v = Value::parse(row).unwrap();
        let events = expand(&v).unwrap();
        let span = check(&v).unwrap();
        assert_eq!(
            span,
            RowSpan {
                seq0: 6,
                count: 3,
                first_time: 100,
                last_time: 101,
                in_order: false,
            }
        );
        assert_eq!(events.len(), 3);
        assert_eq!(events[2].get("time").unwrap().as_f64(), Some(101.0));
        assert_eq!(
            events[0].to_json(),
            r#"{"type":"assistant/chunk","seq":6,"time":100,"data":{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c","name":"bash","argumentsDelta":"{\"a"}}}"#
        );
        let bad = Value::parse(r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b"]}}"#).unwrap();
        assert!(check(&bad).is_err() && expand(&bad).is_err());
    }
}
