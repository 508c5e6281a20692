//! `dsh measure` of one log: the meter's figure with the routed compaction
//! policy, and (when asked) an exact tokenizer count and where the tokens go.
//!
//! ```no_run
//! let config = dsh::config::Config::default();
//! let job = dsh::measure::Job::new(dsh::LoadOptions::default(), &config);
//! let (r, _warnings) = job.run(&dsh::LogSource::File("session.jsonl".into()))?;
//! println!("{} tokens, over the threshold: {}", r.m.total_tokens, r.over_threshold());
//! # Ok::<(), dsh::meter::MeasureError>(())
//! ```

use std::time::Instant;

use crate::config::Config;
use crate::json::OwnedValue;
use crate::log::{LoadError, LoadOptions, LoadedLog, LogSource};
use crate::meter::tokenizer::{self, Encoding, TokenCounts};
use crate::meter::{MeasureError, Measurement};
use crate::policy::{Budgets, Capacity, CapacitySource, Policy, PolicyError};

/// The policy resolved for one log.
#[derive(Debug, Clone)]
pub struct PolicyReport {
    /// The routed target's compaction policy.
    pub policy: Policy,
    /// Its context window and where it came from.
    pub capacity: Capacity,
    /// The threshold and retained budgets in that window.
    pub budgets: Budgets,
    /// The `request/context` the window was read from, when it was logged.
    pub logged_seq: Option<u64>,
}

/// Why a log has no policy to be measured against.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoPolicy {
    /// The log names no provider/model and none was given.
    #[error("no routed target: the log has no request/header (use --route)")]
    NoRoute,
    /// The route's context window is neither configured nor logged.
    #[error("{}", crate::policy::no_capacity_message(.provider, .model))]
    NoCapacity {
        /// The routed provider.
        provider: String,
        /// The routed model.
        model: String,
    },
    /// The policy's budgets do not fit the window.
    #[error(transparent)]
    Budgets(#[from] PolicyError),
}

/// Everything measured for one log.
#[derive(Debug, Clone)]
pub struct Report {
    /// The log as given.
    pub file: String,
    /// The session id of its header.
    pub session: String,
    /// The meter's measurement.
    pub m: Measurement,
    /// The kind of each surface node, in surface order.
    pub node_kinds: Vec<crate::Kind>,
    /// The routed policy, or why there is none.
    pub policy: Result<PolicyReport, NoPolicy>,
    /// With a tokenizer: its counts and the seconds they took.
    pub tokens: Option<(TokenCounts, f64)>,
    /// With DeepSeek's tokenizer on a log whose system prompt or tools are
    /// placeholders: the hidden prefix estimated from the first usage.
    pub hidden: Option<u64>,
    /// Where the tokens go, when asked.
    pub fill: Option<crate::fill::Fill>,
    /// `--at`: the seq the log was measured at.
    pub at: Option<u64>,
}

impl Report {
    /// Whether the log is at or over its policy's threshold.
    pub fn over_threshold(&self) -> bool {
        self.policy
            .as_ref()
            .is_ok_and(|p| p.budgets.over_threshold(self.m.total_tokens))
    }
}

/// What to measure each log with.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    /// How to load (`upto`: `--at`).
    pub opts: LoadOptions,
    /// A request header measured instead of the logged one.
    pub header: Option<OwnedValue>,
    /// A provider/model instead of the routed target.
    pub route: Option<(String, String)>,
    /// A context window instead of the configured or logged one.
    pub context_window: Option<u64>,
    /// The dsh configuration.
    pub config: &'a Config,
    /// A tokenizer to count with too.
    pub encoding: Option<Encoding>,
    /// Whether to break the surface down by what fills it.
    pub fill: bool,
}

impl<'a> Job<'a> {
    /// Measure with `opts` and `config`, nothing more.
    pub fn new(opts: LoadOptions, config: &'a Config) -> Job<'a> {
        Job {
            opts,
            header: None,
            route: None,
            context_window: None,
            config,
            encoding: None,
            fill: false,
        }
    }

    fn policy(&self, log: &LoadedLog, m: &Measurement) -> Result<PolicyReport, NoPolicy> {
        let (provider, model) = match self.route.clone().or_else(|| log.headers.route()) {
            Some(r) if !r.0.is_empty() && !r.1.is_empty() => r,
            _ => return Err(NoPolicy::NoRoute),
        };
        let policy = self.config.policy_for(&provider, &model);
        let logged = m.logged_context_window(&provider, &model);
        let capacity = self
            .config
            .capacity(&provider, &model, self.context_window, logged.map(|l| l.0))
            .ok_or_else(|| NoPolicy::NoCapacity {
                provider: provider.clone(),
                model: model.clone(),
            })?;
        let budgets = policy.budgets(capacity.context_window)?;
        Ok(PolicyReport {
            logged_seq: logged
                .filter(|_| capacity.source == CapacitySource::Logged)
                .map(|l| l.1),
            policy,
            capacity,
            budgets,
        })
    }

    /// Measure one log: its report and the loader's warnings.
    pub fn run(&self, src: &LogSource) -> Result<(Report, Vec<String>), MeasureError> {
        let (log, m) = crate::meter::measure(src, &self.opts, self.header.clone())?;
        // `--at` names a seq of this log; past its end there is nothing it
        // could mean (the full log would silently be measured).
        if let Some(at) = self.opts.upto
            && log.truncated_at.is_none()
            && at >= log.stored_events
        {
            let last = match log.stored_events {
                0 => "it has no events".to_string(),
                n => format!("its last seq is {}", n - 1),
            };
            return Err(MeasureError::Load(
                LoadError::invalid(format!(
                    "--at {at} is past the end of the log ({last}): give a seq up to the last one"
                ))
                .file(src.display()),
            ));
        }
        let policy = self.policy(&log, &m);
        let tokens = match self.encoding {
            None => None,
            Some(enc) => {
                let header = self
                    .header
                    .clone()
                    .map(|h| crate::request_header::canonical(&h));
                let header = header.as_ref().or(log.headers.header.as_ref());
                enc.load();
                let t0 = Instant::now();
                let counts = tokenizer::count(&log, header, enc)?;
                Some((counts, t0.elapsed().as_secs_f64()))
            }
        };
        let hidden = match (&tokens, &self.header) {
            (Some((c, _)), None) if c.encoding == Encoding::DeepSeekV4 => {
                let opts = crate::cache::CacheOptions {
                    tokenizer: Some(c.encoding),
                    ..Default::default()
                };
                crate::hidden_prefix::analyse(src, &self.opts, &opts)
                    .ok()
                    .and_then(|(_, h)| h)
                    .map(|h| h.tokens)
            }
            _ => None,
        };
        let fill = match self.fill {
            true => Some(crate::fill::measure(src, &self.opts)?.1),
            false => None,
        };
        let report = Report {
            fill,
            file: src.display(),
            session: log.header.id.clone(),
            node_kinds: log.surface.nodes.iter().map(|n| n.kind).collect(),
            m,
            policy,
            tokens,
            hidden,
            at: self.opts.upto,
        };
        Ok((report, log.warnings.clone()))
    }
}
