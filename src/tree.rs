//! The delegation forest: which session spawned which.
//!
//! A session whose header names a `parentSession` is that session's child:
//! a **fork** when its log begins with a copy of the parent's (a seed,
//! [`Session::fork_of`]), a **subagent** when its header's `origin` says so,
//! else a plain child. [`forest`] hangs every session under its parent
//! (found by id among the sessions given; the first session of an id when
//! ids repeat) and rolls each subtree's requests and cost up from its
//! sessions' own, priced through [`usage`](crate::usage). When several
//! sessions share the parent's id (copied sessions, placeholder ids), the
//! one whose log path shares the longest beginning with the child's is the
//! parent (a child usually lies beside it). A subtree costs
//! exactly the sum of its sessions' costs (a fork's inherited seed is
//! counted once, in the parent that made it). A session whose parent is
//! not among them, or whose parent chain comes back to itself, is a root.
//!
//! ```
//! let src = dsh::LogSource::File("samples/compacted.jsonl".into());
//! let s = dsh::sessions::scan(&src, &dsh::sessions::ScanOptions::default()).unwrap();
//! let forest = dsh::tree::forest(&[s], &dsh::price::PriceTable::builtin());
//! assert_eq!(forest.len(), 1);
//! assert_eq!(forest[0].subtree.requests, forest[0].own.requests);
//! ```

use std::collections::HashMap;

use crate::price::PriceTable;
use crate::sessions::Session;
use crate::usage::{Sums, session_sums};

/// How a session hangs from its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Relation {
    /// No parent.
    Root,
    /// A fork: began as a copy of the parent's log.
    Fork,
    /// A delegated subagent (header `origin: subagent`).
    Subagent,
    /// Names a parent, neither of the above.
    Child,
    /// Names a parent that is not among the sessions (or a cycle).
    Orphan,
}

impl Relation {
    /// `root`, `fork`, `subagent`, `child`, `orphan`.
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Root => "root",
            Relation::Fork => "fork",
            Relation::Subagent => "subagent",
            Relation::Child => "child",
            Relation::Orphan => "orphan",
        }
    }
}

/// One session of the forest and everything below it.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The session's index in the slice given to [`forest`].
    pub index: usize,
    /// How it hangs from its parent.
    pub relation: Relation,
    /// Its own requests and cost.
    pub own: Sums,
    /// Its own plus every descendant's.
    pub subtree: Sums,
    /// Sessions in the subtree (itself included).
    pub sessions: u64,
    /// Its children, oldest first (by start time, then input order).
    pub children: Vec<Node>,
}

/// Hang `sessions` from their parents; the roots in input order.
pub fn forest(sessions: &[Session], prices: &PriceTable) -> Vec<Node> {
    let mut by_id: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, s) in sessions.iter().enumerate() {
        by_id.entry(s.id.as_str()).or_default().push(i);
    }
    let shared = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let parent_of = |i: usize| -> Option<usize> {
        let p = sessions[i].parent.as_deref()?;
        let file = &sessions[i].file;
        by_id
            .get(p)?
            .iter()
            .copied()
            .filter(|&j| j != i)
            .max_by_key(|&j| (shared(&sessions[j].file, file), std::cmp::Reverse(j)))
    };
    // A parent chain that comes back to where it started is cut there.
    let parent: Vec<Option<usize>> = (0..sessions.len())
        .map(|i| {
            let first = parent_of(i)?;
            let mut seen = vec![i];
            let mut at = first;
            loop {
                if seen.contains(&at) {
                    return None;
                }
                seen.push(at);
                match parent_of(at) {
                    Some(next) => at = next,
                    None => return Some(first),
                }
            }
        })
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); sessions.len()];
    let mut roots = Vec::new();
    for (i, p) in parent.iter().enumerate() {
        match p {
            Some(p) => children[*p].push(i),
            None => roots.push(i),
        }
    }
    for c in &mut children {
        c.sort_by_key(|&i| (sessions[i].started.is_none(), sessions[i].started, i));
    }
    roots
        .into_iter()
        .map(|i| build(i, sessions, &children, &parent, prices))
        .collect()
}

fn build(
    i: usize,
    sessions: &[Session],
    children: &[Vec<usize>],
    parent: &[Option<usize>],
    prices: &PriceTable,
) -> Node {
    let s = &sessions[i];
    let relation = match (parent[i], &s.parent) {
        (None, None) => Relation::Root,
        (None, Some(_)) => Relation::Orphan,
        (Some(_), _) if s.fork_of.is_some() => Relation::Fork,
        (Some(_), _) if s.origin.as_deref() == Some("subagent") => Relation::Subagent,
        (Some(_), _) => Relation::Child,
    };
    let own = session_sums(&s.requests, prices);
    let kids: Vec<Node> = children[i]
        .iter()
        .map(|&c| build(c, sessions, children, parent, prices))
        .collect();
    let mut subtree = own.clone();
    let mut count = 1;
    for k in &kids {
        subtree.merge(&k.subtree);
        count += k.sessions;
    }
    Node {
        index: i,
        relation,
        own,
        subtree,
        sessions: count,
        children: kids,
    }
}
