//! `dsh sessions --json`: every session of a home, or why it was refused.

use schemars::JsonSchema;
use serde::Serialize;

use super::error::LogRefusal;
use super::{Document, SchemaVersion};
use crate::civil::rfc3339;
use crate::lock::LockState;
use crate::sessions::{Refused as RefusedLog, Session};
use crate::tree::Relation;
use crate::usage::Sums;

/// Every session of a DSH home (or of the LOGs / directories given): one
/// entry per log, what it is and where it stands, or why it was refused.
/// Times are RFC 3339 UTC strings (null when unknown).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sessions<'a> {
    /// The sessions, then the refused logs.
    pub logs: Vec<Entry<'a>>,
    /// Totals over the sessions listed.
    pub summary: Summary,
    /// Logs that matched the filters (listed and refused).
    pub matched: u64,
    /// Sessions left out by --since/--until because their time is unknown.
    pub left_out_unknown_time: u64,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Sessions<'_> {
    const NAME: &'static str = "sessions";
    const TITLE: &'static str = "dsh sessions --json";
}

/// One log.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Entry<'a> {
    /// A session read.
    Session(Box<Row<'a>>),
    /// A log refused.
    Refused(Refused),
}

/// A log refused, with its size.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Refused {
    /// Why.
    #[serde(flatten)]
    pub refusal: LogRefusal,
    /// Its size in bytes, when it could be read.
    pub size_bytes: Option<u64>,
}

/// A session's row.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Row<'a> {
    /// The log as given on the command line (`-` for standard input).
    pub file: &'a str,
    /// The session id of the log's header.
    pub session: &'a str,
    /// Its project (the header's `cwd`).
    pub project: Option<&'a str>,
    /// The session it was delegated from.
    pub parent: Option<&'a str>,
    /// The parent when the session is a fork of it (its log begins with a
    /// copy of the parent's: the seed).
    pub fork_of: Option<&'a str>,
    /// Requests in the fork's seed: the parent's, counted there and left
    /// out of every figure of this row.
    pub inherited_requests: u64,
    /// Its title.
    pub title: Option<&'a str>,
    /// Its first event's time.
    pub started: Option<String>,
    /// The same, epoch ms.
    pub started_ms: Option<i64>,
    /// Its last event's time.
    pub last_activity: Option<String>,
    /// The same, epoch ms.
    pub last_activity_ms: Option<i64>,
    /// Turns.
    pub turns: u64,
    /// Events.
    pub events: u64,
    /// The log's size in bytes.
    pub size_bytes: u64,
    /// The surface's tokens now.
    #[schemars(with = "Option<u64>")]
    pub surface_tokens: Option<f64>,
    /// The model's context window.
    #[schemars(with = "Option<u64>")]
    pub context_window: Option<f64>,
    /// Surface tokens in percent of the window (two decimals).
    pub pressure_percent: Option<f64>,
    /// Whether the pressure is over the compaction threshold.
    pub over_threshold: Option<bool>,
    /// The provider and model of its last request.
    pub route: Option<Route<'a>>,
    /// Compactions.
    pub compactions: u64,
    /// Prune passes.
    pub prunes: u64,
    /// Its compaction lock.
    pub lock: Lock,
    /// The log's format generation.
    pub generation: u64,
    /// Requests with reported usage the session made: the agent's and the
    /// compaction summariser's (agentRequests + summariserRequests).
    pub requests: u64,
    /// Of them, the agent's (assistant/message).
    pub agent_requests: u64,
    /// Of them, the compaction summariser's (compaction/summary).
    pub summariser_requests: u64,
    /// What they cost, USD; null when none has a price.
    pub cost_usd: Option<f64>,
    /// Requests without a known price, left out of costUsd.
    pub unpriced_requests: u64,
    /// Why the token meter could not replay the log.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub meter_error: Option<&'a str>,
    /// File names of older format generations beside the log (DSH keeps the
    /// file it migrated from); the newest is the one read.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub older_generations: &'a [String],
    /// The loader's notes.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub warnings: &'a [String],
}

/// A provider and model.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Route<'a> {
    /// The provider.
    pub provider: &'a str,
    /// The model.
    pub model: &'a str,
}

/// A pressure as a percentage with two decimals.
pub(super) fn percent(p: Option<f64>) -> Option<f64> {
    p.map(|p| (p * 100.0).round() / 100.0)
}

impl<'a> Route<'a> {
    /// The route of a (provider, model), if any.
    pub(super) fn of(r: &'a Option<(String, String)>) -> Option<Route<'a>> {
        r.as_ref()
            .map(|(provider, model)| Route { provider, model })
    }
}

/// A session's compaction lock.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Lock {
    /// Its state.
    pub state: LockState,
    /// Busy locks.
    pub busy: u64,
    /// Stale locks.
    pub stale: u64,
}

/// Totals over the sessions listed.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Sessions listed.
    pub sessions: u64,
    /// Logs refused.
    pub refused: u64,
    /// Their turns.
    pub turns: u64,
    /// Their events.
    pub events: u64,
    /// Their size in bytes.
    pub size_bytes: u64,
    /// What they cost, USD; null when none has a price.
    pub cost_usd: Option<f64>,
    /// Requests of the listed sessions without a known price, left out of
    /// costUsd.
    pub unpriced_requests: u64,
    /// Busy locks.
    pub busy: u64,
    /// Stale locks.
    pub stale: u64,
}

impl<'a> Row<'a> {
    /// The row of session `s`, its requests summed in `sums`.
    pub fn of(s: &'a Session, sums: &Sums) -> Row<'a> {
        Row {
            file: &s.file,
            session: &s.id,
            project: s.project.as_deref(),
            parent: s.parent.as_deref(),
            fork_of: s.fork_of.as_deref(),
            inherited_requests: s.inherited_requests,
            title: s.title.as_deref(),
            started: s.started.map(rfc3339),
            started_ms: s.started,
            last_activity: s.last_activity.map(rfc3339),
            last_activity_ms: s.last_activity,
            turns: s.turns,
            events: s.events,
            size_bytes: s.size,
            surface_tokens: s.surface_tokens,
            context_window: s.context_window,
            pressure_percent: percent(s.pressure),
            over_threshold: s.over_threshold,
            route: Route::of(&s.route),
            compactions: s.compactions,
            prunes: s.prunes,
            lock: Lock {
                state: s.lock,
                busy: s.busy_locks,
                stale: s.stale_locks,
            },
            generation: s.generation,
            requests: sums.requests + sums.summariser_requests,
            agent_requests: sums.requests,
            summariser_requests: sums.summariser_requests,
            cost_usd: sums.cost(),
            unpriced_requests: sums.without_cost(),
            meter_error: s.meter_error.as_deref(),
            older_generations: &s.older_generations,
            warnings: &s.warnings,
        }
    }
}

impl Refused {
    /// A refused log's entry.
    pub fn of(r: &RefusedLog) -> Refused {
        Refused {
            refusal: LogRefusal::of(&r.error, &r.file, true),
            size_bytes: r.size,
        }
    }
}

/// The delegation forest: each session under its parent, each subtree's
/// requests and cost rolled up (the sum of its sessions').
#[derive(Debug, Serialize, JsonSchema)]
pub struct Tree<'a> {
    /// The trees, one per root.
    pub trees: Vec<TreeNode<'a>>,
    /// Over every session.
    pub summary: TreeSummary,
    /// Logs that could not be read.
    pub refused: Vec<LogRefusal>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Tree<'_> {
    const NAME: &'static str = "sessions-tree";
    const TITLE: &'static str = "dsh sessions --tree --json";
}

/// One session of the forest and the sessions under it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TreeNode<'a> {
    /// The log.
    pub file: &'a str,
    /// Its session id.
    pub session: &'a str,
    /// The parent its header names.
    pub parent: Option<&'a str>,
    /// How it hangs under its parent.
    pub relation: Relation,
    /// Its title.
    pub title: Option<&'a str>,
    /// Its own requests and cost.
    pub own: TreeSums,
    /// Those of its subtree (itself included).
    pub subtree: SubtreeSums,
    /// The sessions under it.
    pub children: Vec<TreeNode<'a>>,
}

/// Requests and cost.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeSums {
    /// Agent + summariser.
    pub requests: u64,
    /// The agent's.
    pub agent_requests: u64,
    /// The compaction summariser's.
    pub summariser_requests: u64,
    /// Of the priced requests.
    pub cost_usd: f64,
    /// Requests without a price.
    pub unpriced_requests: u64,
}

impl From<&Sums> for TreeSums {
    fn from(x: &Sums) -> TreeSums {
        TreeSums {
            requests: x.requests + x.summariser_requests,
            agent_requests: x.requests,
            summariser_requests: x.summariser_requests,
            cost_usd: x.cost,
            unpriced_requests: x.without_cost(),
        }
    }
}

/// A subtree's requests and cost, and its sessions.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SubtreeSums {
    /// Requests and cost.
    #[serde(flatten)]
    pub sums: TreeSums,
    /// Sessions in the subtree (itself included).
    #[schemars(range(min = 1))]
    pub sessions: u64,
}

/// Over every session of the forest.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeSummary {
    /// Sessions.
    pub sessions: u64,
    /// Trees.
    pub roots: u64,
    /// Requests, agent + summariser.
    pub requests: u64,
    /// Of the priced requests.
    pub cost_usd: f64,
    /// Requests without a price.
    pub unpriced_requests: u64,
}

impl<'a> TreeNode<'a> {
    /// Node `n` of the forest of `sessions`.
    pub fn of(n: &crate::tree::Node, sessions: &'a [Session]) -> TreeNode<'a> {
        let s = &sessions[n.index];
        TreeNode {
            file: &s.file,
            session: &s.id,
            parent: s.parent.as_deref(),
            relation: n.relation,
            title: s.title.as_deref(),
            own: (&n.own).into(),
            subtree: SubtreeSums {
                sums: (&n.subtree).into(),
                sessions: n.sessions,
            },
            children: n
                .children
                .iter()
                .map(|c| TreeNode::of(c, sessions))
                .collect(),
        }
    }
}
