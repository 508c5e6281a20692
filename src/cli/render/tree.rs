//! `sessions --tree`: the delegation forest, drawn or as JSON.

use anyhow::Result;
use dsh::doc::error::LogRefusal;
use dsh::doc::sessions as doc;
use dsh::price::PriceTable;
use dsh::sessions::{Refused, Session};
use dsh::tree::Node;
use dsh::usage::Sums;

use super::{outln, usd};
use crate::cli::ctx::Ctx;

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
        ctx.print_doc(&doc::Tree {
            trees: forest
                .iter()
                .map(|n| doc::TreeNode::of(n, sessions))
                .collect(),
            summary: doc::TreeSummary {
                sessions: sessions.len() as u64,
                roots: forest.len() as u64,
                requests: total.requests + total.summariser_requests,
                cost_usd: total.cost,
                unpriced_requests: total.without_cost(),
            },
            refused: refused
                .iter()
                .map(|r| LogRefusal::of(&r.error, &r.file, true))
                .collect(),
            schema_version: dsh::doc::SchemaVersion,
        })?;
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
        ctx.say_load_error(&r.error);
    }
    Ok(())
}
