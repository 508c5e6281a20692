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

use crate::cache::{Analysis, CacheOptions};
pub use crate::config::{NoPolicy, PolicyReport};

use crate::config::Config;
use crate::event::Event;
use crate::fill::ToolNames;
use crate::json::OwnedValue;
use crate::log::{ChunkRun, Folded, LoadError, LoadOptions, LogSource, Observer};
use crate::meter::tokenizer::{self, Encoding, TokenCounts};
use crate::meter::{MeasureError, Measurement};

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

    /// What the one reading of `src` feeds besides the meter.
    fn riders(&self) -> Riders {
        // DeepSeek's count of a log whose header is placeholders wants the
        // hidden prefix, estimated from the log's cache analysis (none for
        // a header given instead of the logged one).
        let hidden = self.encoding == Some(Encoding::DeepSeekV4) && self.header.is_none();
        Riders {
            names: self.fill.then(ToolNames::default),
            cache: hidden.then(|| {
                Analysis::new(&CacheOptions {
                    tokenizer: self.encoding,
                    ..Default::default()
                })
            }),
        }
    }

    /// Measure one log: its report and the loader's warnings. The log is
    /// read once, whatever is asked.
    pub fn run(&self, src: &LogSource) -> Result<(Report, Vec<String>), MeasureError> {
        let (log, m, riders) =
            crate::meter::measure_with(src, &self.opts, self.header.clone(), || self.riders())?;
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
        let hidden = riders
            .cache
            .and_then(|a| crate::hidden_prefix::shown(a, &log).1)
            .map(|h| h.tokens);
        let fill = match riders.names {
            Some(names) => Some(crate::fill::of(&log, &names)?),
            None => None,
        };
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
        let route = self.route.clone().or_else(|| log.headers.route());
        let policy = self
            .config
            .policy_report(route, self.context_window, |p, md| {
                m.logged_context_window(p, md)
            });
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

/// What one reading of a log feeds besides the meter: the tool names
/// `--fill` needs, the cache analysis a hidden prefix is estimated from.
struct Riders {
    names: Option<ToolNames>,
    cache: Option<Analysis>,
}

impl Observer for Riders {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        if let Some(n) = &mut self.names {
            n.event(ev, folded);
        }
        if let Some(a) = &mut self.cache {
            a.event(ev, folded);
        }
    }

    fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        if let Some(n) = &mut self.names {
            n.chunks(run, folded);
        }
        if let Some(a) = &mut self.cache {
            a.chunks(run, folded);
        }
    }
}
