//! Range selection for compaction (compaction §4): which head span of the
//! surface a checkpoint replaces.
//!
//! Work is positional, on the current surface order. Tool pairing is a running
//! balance: an assistant message opens one call per `tool-call` block, a
//! `tool/result` closes one; a cut is balanced where the balance is zero. The
//! selection keeps a recent tail worth `retainTokens` (the node that crosses
//! the budget is kept), rounds the cut towards the head to the nearest
//! balanced cut, and starts at position 0 (position 1 behind a G3 system
//! head, which is never compacted).
//!
//! ```
//! let src = dsh::LogSource::File("samples/compacted.jsonl".into());
//! let log = dsh::log::load(&src, &dsh::LoadOptions::default(), &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {})?;
//! use dsh::range::{Selection, select_range};
//! // Keep about 200 tokens of recent history; the rest is a candidate span.
//! match select_range(&log.surface.nodes, 200)? {
//!     Selection::Range(region) => println!("compact {region:?}"),
//!     Selection::Declined(why) => println!("nothing to compact: {why:?}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::event::Kind;
use crate::surface::Node;

/// A selected span: surface positions `start_pos..=end_pos`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// Seq of the first shadowed node.
    pub start: u64,
    /// Seq of the last shadowed node (may be numerically smaller than
    /// `start`: a checkpoint at the head has a newer seq).
    pub end: u64,
    /// Position of `start`.
    pub start_pos: usize,
    /// Position of `end`.
    pub end_pos: usize,
}

impl Region {
    /// The shadowed nodes.
    pub(crate) fn nodes<'a>(&self, surface: &'a [Node]) -> &'a [Node] {
        &surface[self.start_pos..=self.end_pos]
    }

    /// The shadowed seqs, in surface order.
    pub(crate) fn seqs(&self, surface: &[Node]) -> Vec<u64> {
        self.nodes(surface).iter().map(|n| n.seq).collect()
    }

    /// Sum of the shadowed node prices (`shadowedTokenCount`).
    pub(crate) fn tokens(&self, surface: &[Node]) -> u64 {
        self.nodes(surface).iter().map(|n| n.tokens).sum()
    }
}

/// Why selection returned `null`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decline {
    /// The surface is empty.
    EmptySurface,
    /// The retain budget covers the whole surface.
    RetainCoversAll {
        /// The budget.
        retain_tokens: u64,
        /// The whole surface's price.
        surface_tokens: u64,
    },
    /// No balanced cut between position 1 and the retained tail.
    NoBalancedCut,
}

impl Decline {
    /// A sentence for the user.
    pub fn explain(&self) -> String {
        match self {
            Decline::EmptySurface => "the surface is empty".into(),
            Decline::RetainCoversAll {
                retain_tokens,
                surface_tokens,
            } => format!(
                "the recent-tail budget ({retain_tokens} tokens) covers the whole surface ({surface_tokens} tokens); the pressure comes from the envelope (system prompt, tools), which compaction cannot reduce"
            ),
            Decline::NoBalancedCut => "there is no balanced cut before the retained tail: the head is one indivisible tool-call/result unit (or a step whose tool calls have no results yet)".into(),
        }
    }
}

/// The outcome of `selectRange`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// A span to compact.
    Range(Region),
    /// `null`.
    Declined(Decline),
}

/// A corrupt surface or an invalid region (reference wording).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RangeError(pub String);

/// `open` delta of a node: calls opened by an assistant message, −1 for a
/// tool result, 0 otherwise.
fn delta(n: &Node) -> i64 {
    match n.kind {
        Kind::AssistantMessage => n.tool_calls.len() as i64,
        Kind::ToolResult => -1,
        _ => 0,
    }
}

/// `cutBalanced[0..=n]`: whether the cut before each position (and after the
/// last) is balanced.
fn cut_balanced(nodes: &[Node]) -> Result<Vec<bool>, RangeError> {
    let mut out = Vec::with_capacity(nodes.len() + 1);
    out.push(true);
    let mut open: i64 = 0;
    for n in nodes {
        open += delta(n);
        if open < 0 {
            return Err(RangeError(format!(
                "tool-pairing balance: tool/result at surface seq {} has no matching tool-call (corrupt surface)",
                n.seq
            )));
        }
        out.push(open == 0);
    }
    Ok(out)
}

/// `selectRange(measurement, retainTokens)`. A G3 `system/message` head is
/// never compacted (compaction §12.2): the range then starts at position 1,
/// and a retained tail reaching back to the head declines.
pub fn select_range(nodes: &[Node], retain_tokens: u64) -> Result<Selection, RangeError> {
    let n = nodes.len();
    if n == 0 {
        return Ok(Selection::Declined(Decline::EmptySurface));
    }
    let first = usize::from(nodes[0].kind == Kind::SystemMessage);
    let balanced = cut_balanced(nodes)?;
    let mut acc: u64 = 0;
    let mut keep = n;
    for i in (0..n).rev() {
        acc += nodes[i].tokens;
        keep = i;
        if acc >= retain_tokens {
            break;
        }
    }
    if keep <= first {
        return Ok(Selection::Declined(Decline::RetainCoversAll {
            retain_tokens,
            surface_tokens: nodes.iter().map(|x| x.tokens).sum(),
        }));
    }
    while keep > first && !balanced[keep] {
        keep -= 1;
    }
    if keep <= first {
        return Ok(Selection::Declined(Decline::NoBalancedCut));
    }
    Ok(Selection::Range(Region {
        start: nodes[first].seq,
        end: nodes[keep - 1].seq,
        start_pos: first,
        end_pos: keep - 1,
    }))
}

/// Re-validate a region on a surface (§4.2, `compactRegion`).
pub(crate) fn validate_region(nodes: &[Node], start: u64, end: u64) -> Result<Region, RangeError> {
    let pos = |seq: u64, which: &str| {
        nodes.iter().position(|n| n.seq == seq).ok_or_else(|| {
            RangeError(format!(
                "compactRegion: {which} seq {seq} is not on the surface"
            ))
        })
    };
    let i = pos(start, "start")?;
    let j = pos(end, "end")?;
    if i > j {
        return Err(RangeError(format!(
            "compactRegion: start seq {start} (position {i}) is after end seq {end} (position {j}) on the surface"
        )));
    }
    if i == 0 && nodes[0].kind == Kind::SystemMessage {
        return Err(RangeError(format!(
            "compactRegion: start seq {start} is the system/message head, which is never compacted; start at the next node"
        )));
    }
    let balanced = cut_balanced(nodes)?;
    if !balanced[i] {
        return Err(RangeError(format!(
            "compactRegion: start seq {start} is not a balanced boundary (would split a step's tool-call/result pair)"
        )));
    }
    if !balanced[j + 1] {
        return Err(RangeError(format!(
            "compactRegion: end seq {end} is not a balanced boundary (would split a step, or the step is still open)"
        )));
    }
    Ok(Region {
        start,
        end,
        start_pos: i,
        end_pos: j,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::surface::NodeBody;

    pub(crate) fn node(seq: u64, kind: Kind, tokens: u64, calls: usize) -> Node {
        let facts = crate::surface::NodeFacts {
            tokens,
            derives: true,
            msg_id: None,
            call_id: None,
            tool_calls: (0..calls).map(|i| format!("c{seq}-{i}").into()).collect(),
            text_units: None,
        };
        let mut s = crate::surface::Surface::default();
        let v = crate::json::Value::obj()
            .with("type", "user/message".into())
            .with("seq", seq.into());
        let ev = crate::event::owned_event(kind, seq, v);
        let body = NodeBody::Owned(std::sync::Arc::new(ev.clone()));
        s.apply(&ev, crate::event::SurfaceOp::Append, facts, body)
            .unwrap();
        s.nodes.pop().unwrap()
    }

    /// The §4.4 surface after pruning.
    fn worked() -> Vec<Node> {
        use Kind::*;
        vec![
            node(2, UserMessage, 30, 0),
            node(10, AssistantMessage, 15, 1),
            node(35, ToolResult, 1302, 0),
            node(20, AssistantMessage, 15, 1),
            node(22, ToolResult, 1017, 0),
            node(30, AssistantMessage, 15, 1),
            node(32, ToolResult, 1017, 0),
        ]
    }

    #[test]
    fn worked_example_selects_2_to_22() {
        let nodes = worked();
        assert_eq!(
            cut_balanced(&nodes).unwrap(),
            vec![true, true, false, true, false, true, false, true]
        );
        for retain in [640, 0] {
            let Selection::Range(r) = select_range(&nodes, retain).unwrap() else {
                panic!("declined")
            };
            assert_eq!((r.start, r.end, r.end_pos), (2, 22, 4));
            assert_eq!(r.seqs(&nodes), vec![2, 10, 35, 20, 22]);
            assert_eq!(r.tokens(&nodes), 2379);
        }
    }

    #[test]
    fn declines() {
        use Kind::*;
        assert_eq!(
            select_range(&[], 0).unwrap(),
            Selection::Declined(Decline::EmptySurface)
        );
        let pair = vec![node(1, AssistantMessage, 10, 1), node(2, ToolResult, 10, 0)];
        assert_eq!(
            select_range(&pair, 0).unwrap(),
            Selection::Declined(Decline::NoBalancedCut)
        );
        let nodes = worked();
        assert_eq!(
            select_range(&nodes, 100_000).unwrap(),
            Selection::Declined(Decline::RetainCoversAll {
                retain_tokens: 100_000,
                surface_tokens: 3411
            })
        );
        // [user, assistant(call), result] with retain 0 degenerates to the head.
        let three = vec![
            node(0, UserMessage, 5, 0),
            node(1, AssistantMessage, 5, 1),
            node(2, ToolResult, 5, 0),
        ];
        let Selection::Range(r) = select_range(&three, 0).unwrap() else {
            panic!()
        };
        assert_eq!((r.start, r.end), (0, 0));
    }

    #[test]
    fn corrupt_and_invalid_regions() {
        use Kind::*;
        let bad = vec![node(4, ToolResult, 1, 0)];
        assert_eq!(
            cut_balanced(&bad).unwrap_err().0,
            "tool-pairing balance: tool/result at surface seq 4 has no matching tool-call (corrupt surface)"
        );
        let nodes = worked();
        assert_eq!(validate_region(&nodes, 2, 22).unwrap().end_pos, 4);
        assert!(
            validate_region(&nodes, 22, 2)
                .unwrap_err()
                .0
                .contains("is after end seq 2")
        );
        assert!(
            validate_region(&nodes, 2, 10)
                .unwrap_err()
                .0
                .contains("end seq 10 is not a balanced boundary")
        );
        assert!(
            validate_region(&nodes, 35, 22)
                .unwrap_err()
                .0
                .contains("start seq 35 is not a balanced boundary")
        );
        assert!(validate_region(&nodes, 99, 22).is_err());
    }
}
