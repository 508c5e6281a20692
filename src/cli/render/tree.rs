//! `sessions --tree`: the delegation forest, drawn or as JSON.

use anyhow::Result;
use dsh::json::{OwnedValue, Value};
use dsh::price::PriceTable;
use dsh::sessions::{Refused, Session};
use dsh::tree::Node;
use dsh::usage::Sums;

use super::{outln, usd};
use crate::cli::ctx::{Ctx, SCHEMA_VERSION, load_error_json};

fn node_json(n: &Node, sessions: &[Session]) -> OwnedValue {
    let s = &sessions[n.index];
    let sums = |x: &Sums| {
        Value::obj()
            .with("requests", (x.requests + x.summariser_requests).into())
            .with("agentRequests", x.requests.into())
            .with("summariserRequests", x.summariser_requests.into())
            .with("costUsd", x.cost.into())
            .with("unpricedRequests", x.without_cost().into())
    };
    Value::obj()
        .with("file", s.file.as_str().into())
        .with("session", s.id.as_str().into())
        .with("parent", s.parent.clone().into())
        .with("relation", n.relation.as_str().into())
        .with("title", s.title.clone().into())
        .with("own", sums(&n.own))
        .with(
            "subtree",
            sums(&n.subtree).with("sessions", n.sessions.into()),
        )
        .with(
            "children",
            Value::Arr(n.children.iter().map(|c| node_json(c, sessions)).collect()),
        )
}

/// Lines of one subtree: `prefix` drawn before each child's branch.
fn draw(
    n: &Node,
    sessions: &[Session],
    prefix: &str,
    last: bool,
    root: bool,
    t: &mut super::table::Tbl,
) {
    let s = &sessions[n.index];
    let branch = match (root, last) {
        (true, _) => String::new(),
        (false, true) => format!("{prefix}└─ "),
        (false, false) => format!("{prefix}├─ "),
    };
    let id: String = s.id.chars().take(8).collect();
    let title = super::cut(s.title.as_deref().unwrap_or_default(), 40);
    t.add_row(vec![
        format!("{branch}{id} {title}"),
        n.relation.as_str().to_string(),
        super::num(n.own.requests + n.own.summariser_requests),
        usd(Some(n.own.cost)),
        super::num(n.sessions),
        super::num(n.subtree.requests + n.subtree.summariser_requests),
        usd(Some(n.subtree.cost)),
    ]);
    let inner = match (root, last) {
        (true, _) => String::new(),
        (false, true) => format!("{prefix}   "),
        (false, false) => format!("{prefix}│  "),
    };
    for (i, c) in n.children.iter().enumerate() {
        draw(c, sessions, &inner, i + 1 == n.children.len(), false, t);
    }
}

/// Print the forest of `sessions` (a table, or `--json`).
pub fn show(
    ctx: &mut Ctx,
    sessions: &[Session],
    prices: &PriceTable,
    refused: &[Refused],
) -> Result<()> {
    let forest = dsh::tree::forest(sessions, prices);
    let mut total = Sums::default();
    for n in &forest {
        total.merge(&n.subtree);
    }
    if ctx.json {
        let refused: Vec<OwnedValue> = refused
            .iter()
            .map(|r| {
                let mut v = load_error_json(&r.error);
                v.remove("schema_version");
                v.set("file", r.file.as_str().into());
                v
            })
            .collect();
        let summary = Value::obj()
            .with("sessions", sessions.len().into())
            .with("roots", forest.len().into())
            .with(
                "requests",
                (total.requests + total.summariser_requests).into(),
            )
            .with("costUsd", total.cost.into())
            .with("unpricedRequests", total.without_cost().into());
        ctx.print_json(
            &Value::obj()
                .with(
                    "trees",
                    Value::Arr(forest.iter().map(|n| node_json(n, sessions)).collect()),
                )
                .with("summary", summary)
                .with("refused", Value::Arr(refused))
                .with("schema_version", SCHEMA_VERSION.into()),
        )?;
        return Ok(());
    }
    let mut t = super::table(&[
        "session",
        "relation",
        "requests",
        "cost $",
        "subtree sessions",
        "subtree requests",
        "subtree cost $",
    ]);
    for n in &forest {
        draw(n, sessions, "", true, true, &mut t);
    }
    outln!(ctx.out, "{t}")?;
    outln!(
        ctx.out,
        "{} session(s) in {} tree(s): {} request(s), {} USD",
        super::num(sessions.len() as u64),
        super::num(forest.len() as u64),
        super::num(total.requests + total.summariser_requests),
        usd(Some(total.cost))
    )?;
    if total.without_cost() > 0 {
        outln!(
            ctx.out,
            "cost: {} request(s) have no price; their tokens are counted",
            super::num(total.without_cost())
        )?;
    }
    for r in refused {
        eprintln!(
            "{} {}",
            super::error_tag(),
            ctx.describe_load_error(&r.error)
        );
    }
    Ok(())
}
