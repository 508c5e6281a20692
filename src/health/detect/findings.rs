//! Pricing the evidence: each kind's findings and what they cost.

use super::{Abandoned, Bracket, Fold};
use crate::attempt::CompactionMode;
use crate::health::{Cost, Finding, FindingKind, HealthOptions, Severity};
use crate::lock::{LockReport, LockStatus};
use crate::price::{Priced, Tokens};
use crate::sessions::Session;
use crate::usage::{Request, Sums};

/// The cost of the requests `pick` chooses, priced through the usage sums.
fn requests_cost(
    requests: &[Request],
    opts: &HealthOptions,
    pick: impl Fn(&Request) -> bool,
) -> Cost {
    let mut sums = Sums::default();
    for r in requests.iter().filter(|r| pick(r)) {
        sums.add(
            r,
            opts.prices.price(&r.provider, &r.model, r.time, &r.tokens),
        );
    }
    Cost {
        tokens: sums.tokens.total(),
        usd: sums.cost,
        unpriced: sums.without_cost(),
    }
}

/// `tokens` priced as the given class of input for a route at a time:
/// `as_input` less `as_cache_hit` when both are given (what a cache miss
/// cost over a hit).
fn tokens_cost(
    opts: &HealthOptions,
    route: Option<&(String, String)>,
    time: Option<i64>,
    as_input: f64,
    as_cache_hit: f64,
) -> Cost {
    let usd = route.and_then(|(p, m)| {
        let price = |t: Tokens| match opts.prices.price(p, m, time, &t) {
            Priced::Cost { usd, .. } => Some(usd),
            _ => None,
        };
        let full = price(Tokens {
            input: as_input,
            ..Tokens::default()
        });
        let hit = price(Tokens {
            cache_read: as_cache_hit,
            ..Tokens::default()
        });
        Some(full? - hit?)
    });
    Cost {
        tokens: as_input,
        usd: usd.unwrap_or(0.0),
        unpriced: u64::from(usd.is_none()),
    }
}

fn finding(
    kind: FindingKind,
    severity: Severity,
    mut seqs: Vec<u64>,
    message: String,
    cost: Cost,
) -> Finding {
    seqs.sort_unstable();
    seqs.dedup();
    Finding {
        kind,
        severity,
        seqs,
        message,
        cost,
    }
}

impl Fold<'_> {
    /// Price the evidence against the session and turn it into findings,
    /// in log order.
    pub(in crate::health) fn finish(
        self,
        s: &Session,
        locks: &LockReport,
        opts: &HealthOptions,
    ) -> Vec<Finding> {
        let mut out = Vec::new();
        self.loops(s, opts, &mut out);
        self.rereads(s, opts, &mut out);
        self.summaries(s, opts, &mut out);
        self.overflow_findings(s, opts, &mut out);
        self.churn(opts, &mut out);
        lock_findings(locks, &mut out);
        self.abandoned_turns(s, opts, &mut out);
        out.sort_by_key(|f| (f.seqs.first().copied(), f.kind));
        out
    }

    fn bracket_cost(&self, s: &Session, opts: &HealthOptions, bs: &[&Bracket]) -> Cost {
        let seqs: Vec<u64> = bs.iter().filter_map(|b| b.summary).collect();
        requests_cost(&s.requests, opts, |r| seqs.contains(&r.seq))
    }

    fn loops(&self, s: &Session, opts: &HealthOptions, out: &mut Vec<Finding>) {
        let th = &opts.thresholds;
        let landed: Vec<&Bracket> = self
            .brackets
            .iter()
            .filter(|b| b.summary.is_some() && b.error.is_none())
            .collect();
        let n = th.loop_compactions.max(2) as usize;
        let mut i = 0;
        while i + n <= landed.len() {
            let within =
                |a: usize, b: usize| landed[b].requests - landed[a].requests <= th.loop_requests;
            if !within(i, i + n - 1) {
                i += 1;
                continue;
            }
            let mut j = i + n - 1;
            while j + 1 < landed.len() && within(j + 2 - n, j + 1) {
                j += 1;
            }
            let run = &landed[i..=j];
            let seqs = run
                .iter()
                .flat_map(|b| [Some(b.start), b.summary])
                .flatten()
                .collect();
            let requests = run[run.len() - 1].requests - run[0].requests;
            out.push(finding(
                FindingKind::CompactionLoop,
                Severity::Warn,
                seqs,
                format!(
                    "{} compactions within {} agent request(s) (threshold {} within {}); replaceGeneration {} → {}",
                    run.len(),
                    requests,
                    th.loop_compactions,
                    th.loop_requests,
                    run[0].generation.0,
                    run[run.len() - 1].generation.1
                ),
                self.bracket_cost(s, opts, run),
            ));
            i = j + 1;
        }
        let threshold = match (&s.route, s.context_window) {
            (Some((p, m)), Some(w)) => opts.scan.config.policy_for(p, m).budgets(w).ok(),
            _ => None,
        };
        let Some(budgets) = threshold else { return };
        for a in &self.after {
            let b = &self.brackets[a.bracket];
            if b.mode == Some(CompactionMode::Manual) || !budgets.over_threshold(a.prompt) {
                continue;
            }
            out.push(finding(
                FindingKind::CompactionLoop,
                Severity::Error,
                [Some(b.start), b.summary, b.end, Some(a.message)].into_iter().flatten().collect(),
                format!(
                    "still over the threshold after a compaction: the next request's prompt was {} tokens, the threshold {} of the {} window; replaceGeneration {} → {}",
                    a.prompt, budgets.threshold_tokens, budgets.context_window, b.generation.0, b.generation.1
                ),
                self.bracket_cost(s, opts, &[b]),
            ));
        }
    }

    fn rereads(&self, s: &Session, opts: &HealthOptions, out: &mut Vec<Finding>) {
        for r in &self.rereads {
            if r.tokens < opts.thresholds.reread_min_tokens {
                continue;
            }
            let cost = tokens_cost(opts, s.route.as_ref(), r.time, r.tokens as f64, 0.0);
            out.push(finding(
                FindingKind::LostContextReread,
                Severity::Warn,
                vec![r.lost.result, r.lost.shadow, r.call, r.result],
                format!(
                    "read again after its earlier result (seq {}) was shadowed at seq {}: {} tokens paid again",
                    r.lost.result, r.lost.shadow, r.tokens
                ),
                cost,
            ));
        }
    }

    fn summaries(&self, s: &Session, opts: &HealthOptions, out: &mut Vec<Finding>) {
        let failed = |b: &Bracket| b.error.is_some() || (b.summary.is_some() && b.empty);
        let mut i = 0;
        while i < self.brackets.len() {
            if !failed(&self.brackets[i]) {
                i += 1;
                continue;
            }
            let mut j = i;
            while j + 1 < self.brackets.len()
                && failed(&self.brackets[j + 1])
                && self.brackets[j + 1].turn == self.brackets[i].turn
            {
                j += 1;
            }
            let run: Vec<&Bracket> = self.brackets[i..=j].iter().collect();
            let seqs = run
                .iter()
                .flat_map(|b| [Some(b.start), b.summary, b.end])
                .flatten()
                .collect();
            let what: Vec<String> = run
                .iter()
                .map(|b| match &b.error {
                    Some(e) => format!("failed: {e}"),
                    None => "empty summary".into(),
                })
                .collect();
            out.push(finding(
                FindingKind::SummaryFailure,
                if run.len() >= 2 {
                    Severity::Error
                } else {
                    Severity::Warn
                },
                seqs,
                format!(
                    "{} compaction attempt(s) without a usable summary: {}",
                    run.len(),
                    what.join("; ")
                ),
                self.bracket_cost(s, opts, &run),
            ));
            i = j + 1;
        }
    }

    fn overflow_findings(&self, s: &Session, opts: &HealthOptions, out: &mut Vec<Finding>) {
        for o in &self.overflows {
            let mut cost = match (&o.usage, &o.provider) {
                (Some(t), Some((p, m))) => {
                    let r = Request {
                        seq: o.failed,
                        turn: None,
                        step: None,
                        time: o.time,
                        caller: crate::usage::Caller::Agent,
                        provider: p.clone(),
                        model: m.clone(),
                        tokens: *t,
                    };
                    requests_cost(std::slice::from_ref(&r), opts, |_| true)
                }
                _ => Cost::default(),
            };
            let bs: Vec<&Bracket> = self
                .brackets
                .iter()
                .filter(|b| o.brackets.contains(&b.start))
                .collect();
            cost.add(&self.bracket_cost(s, opts, &bs));
            let mut seqs = vec![o.failed];
            seqs.extend(&o.brackets);
            let (severity, message) = match o.outcome {
                Some((true, seq)) => {
                    seqs.push(seq);
                    (
                        Severity::Warn,
                        format!(
                            "a request overflowed the context window; {} and the retry was answered (seq {seq})",
                            if o.brackets.is_empty() {
                                "no recovery compaction ran"
                            } else {
                                "an overflow compaction recovered"
                            }
                        ),
                    )
                }
                Some((false, seq)) => {
                    seqs.push(seq);
                    (
                        Severity::Error,
                        format!(
                            "a request overflowed the context window and the turn ended without an answer (seq {seq})"
                        ),
                    )
                }
                None => (
                    Severity::Error,
                    "a request overflowed the context window and nothing answered it".to_string(),
                ),
            };
            out.push(finding(
                FindingKind::Overflow,
                severity,
                seqs,
                message,
                cost,
            ));
        }
    }

    fn churn(&self, opts: &HealthOptions, out: &mut Vec<Finding>) {
        if (self.breaks.len() as u64) <= opts.thresholds.churn_breaks {
            return;
        }
        let mut cost = Cost::default();
        for (_, t, p, m, time) in &self.break_input {
            let route = (p.clone(), m.clone());
            cost.add(&tokens_cost(opts, Some(&route), *time, t.input, t.input));
        }
        out.push(finding(
            FindingKind::CacheChurn,
            Severity::Warn,
            self.breaks.clone(),
            format!(
                "the system prompt, tool set or route changed {} times (threshold {}): each change breaks the provider's cached prefix",
                self.breaks.len(),
                opts.thresholds.churn_breaks
            ),
            cost,
        ));
    }

    fn abandoned_turns(&self, s: &Session, opts: &HealthOptions, out: &mut Vec<Finding>) {
        let mut all = self.abandoned.clone();
        if let (Some(start), Some(now), Some(last)) = (self.turn, opts.now, s.last_activity)
            && now - last >= opts.thresholds.idle_ms
        {
            all.push(Abandoned {
                start,
                end: None,
                why: "it is still open and the log has been idle since",
            });
        }
        for a in all {
            let end = a.end.unwrap_or(self.last_seq);
            let cost = requests_cost(&s.requests, opts, |r| r.seq > a.start && r.seq <= end);
            out.push(finding(
                FindingKind::AbandonedTurn,
                Severity::Warn,
                [Some(a.start), a.end].into_iter().flatten().collect(),
                format!(
                    "the turn that began at seq {} never ended: {}",
                    a.start, a.why
                ),
                cost,
            ));
        }
    }
}

fn lock_findings(locks: &LockReport, out: &mut Vec<Finding>) {
    for b in &locks.brackets {
        let (severity, seqs, message) = match b.status {
            LockStatus::Stale => (
                Severity::Warn,
                [Some(b.seq), b.end_seed_seq].into_iter().flatten().collect(),
                "a compaction started and never ended before the session was resumed (stale lock evidence)".to_string(),
            ),
            LockStatus::Orphaned => (
                Severity::Warn,
                [Some(b.seq), b.superseded_by].into_iter().flatten().collect(),
                "a compaction started and never ended before another one started".to_string(),
            ),
            LockStatus::Busy => (
                Severity::Error,
                vec![b.seq],
                "a compaction lock is held: compaction is blocked until it ends (or `dsh locks --release`, if no harness runs it)".to_string(),
            ),
            LockStatus::Matched => continue,
        };
        out.push(finding(
            FindingKind::StaleLock,
            severity,
            seqs,
            message,
            Cost::default(),
        ));
    }
}
