//! Compaction: summarise an old head span of the surface through a model and
//! commit the bracket (compaction §2, §4, §5, §6, §13).
//!
//! Three semantics, chosen by the log's tail (§13):
//!
//! * **manual** (no open turn): owner `null`, retain 0, selected-span
//!   stability, no pruning, one bracket;
//! * **pressure** (open turn, default): threshold check, prune and
//!   re-measure, retain budget, up to `compactionRetries + 1` brackets;
//! * **overflow** (open turn): prune, retain 0, one maximal bracket; a retry
//!   of the failed request is authorised only if `replaceGeneration` advanced.
//!
//! A bracket is `compaction/start` (written before the model is called, so a
//! crash leaves evidence), then `compaction/summary`, the checkpoint
//! `user/message` replacing the span, and `compaction/end`. Every failure
//! after the start closes the bracket with `compaction/end{error}` and leaves
//! the surface as it was. What is known before the call is refused before
//! the start, so nothing of that bracket is written: a request the route
//! cannot send (images on a text-only path, unless [`Images::Placeholder`])
//! and one larger than the summarising model's window
//! ([`Options::summarizer_window`]). A caller that wants nothing at all
//! written in that case (an automatic run prunes first) plays the run on a
//! dry-run session first, as `dsh compact` does.
//!
//! The shared parts do the rest: the [`Session`] writes through the
//! append-only writer ([`crate::append`], under its exclusive lock; plain
//! JSONL or one Zstandard frame per batch) in the lifecycle the tail calls
//! for (manual: Resume, the `session/end-seed` first; automatic: Continue,
//! inside the open turn), re-measures with the token meter
//! (`crate::meter::Meter::snapshot`) after each batch, and prunes with
//! [`crate::prune`].

pub mod outcome;
pub mod plan;
mod session;
pub(crate) mod summary;
mod unsaved;

use crate::append::AppendError;
use crate::cancel::{Cancel, INTERRUPTED};
use crate::event::{Kind, OwnedEvent, owned_event};
use crate::json::{OwnedValue, Value};
use crate::lock::LockState;
use crate::provider::{
    CompletionRequest, ErrorCode, Progress, ProviderError, Summarizer, Usage, WireRequest,
};
use crate::prune::{PruneConfig, PrunedResult};
use crate::range::{self, Decline, Region, Selection};

pub use session::{OpenError, Session};
pub use unsaved::{Unsaved, keep_unsaved, save_unsaved, unsaved_text};

/// Which semantics to run (a report's: the one that ran, never `Auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Manual when no turn is open, otherwise pressure.
    #[serde(skip)]
    Auto,
    /// `compactNow` (§2.7).
    Manual,
    /// `compactIfNeeded("pressure")` (§2.5).
    Pressure,
    /// `compactIfNeeded("context-overflow")` (§2.6).
    Overflow,
}

impl Mode {
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Manual => "manual",
            Mode::Pressure => "pressure",
            Mode::Overflow => "overflow",
        }
    }
}

/// What the summariser request does with image blocks of the shadowed
/// messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Images {
    /// Send them; a text-only route refuses the request (the reference's
    /// `UNSUPPORTED_CONTENT`), and the run stops before anything is written.
    #[default]
    Refuse,
    /// A dsh extension: send each image as the harness's image-offload
    /// placeholder text (session-log §13.4, the offline form), so the
    /// summariser sees that an image was there.
    Placeholder,
}

/// What to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// Semantics.
    pub mode: Mode,
    /// Pressure: `thresholdTokens` for the routed target (required there).
    pub threshold_tokens: Option<u64>,
    /// Pressure: the recent-tail budget (`retainTokens`).
    pub retain_tokens: u64,
    /// Pressure: extra attempts while still above threshold.
    pub compaction_retries: u64,
    /// The summary generation cap (`maxTokens`).
    pub max_tokens: u64,
    /// The summarisation route `(provider, model)`.
    pub target: (String, String),
    /// `sourceCommandId`, written only when given.
    pub source_command_id: Option<String>,
    /// The tool-result pruner's budgets for the automatic paths (`None`: no
    /// pruning). The manual path never prunes.
    pub pruner: Option<PruneConfig>,
    /// Overflow: `maxOverflowRetries`; `0` disables overflow recovery
    /// (nothing is written).
    pub max_overflow_retries: u64,
    /// Image blocks in the summariser request.
    pub images: Images,
    /// The summarising model's context window, when known: a request whose
    /// input (DSH heuristic price) exceeds it is not sent, and nothing of its
    /// bracket is written ([`FailureKind::TooLarge`]).
    pub summarizer_window: Option<u64>,
}

/// Where the engine gets time, ids and reports progress.
pub struct Env<'a> {
    /// The summariser for the target route.
    pub summarizer: &'a dyn Summarizer,
    /// Epoch milliseconds.
    pub clock: &'a dyn Fn() -> f64,
    /// Fresh UUID v4 strings.
    pub ids: &'a mut dyn FnMut() -> String,
    /// Progress of the model call.
    pub progress: &'a mut dyn FnMut(&Progress),
    /// A cancellation request (a signal): checked before each write and
    /// while the model works; a bracket already started is closed with
    /// `compaction/end{error: "interrupted"}` (§5.6).
    pub cancel: &'a Cancel,
}

/// One bracket, as written (or as it would be, in a dry run).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BracketReport {
    /// `compactionId` (empty in a dry run).
    pub compaction_id: String,
    /// Owner: the open turn, or `None` for a standalone bracket.
    #[schemars(with = "Option<u64>")]
    pub turn: Option<f64>,
    /// `shadowedRange`.
    pub shadowed_range: ShadowedRange,
    /// `shadowedSeqs`.
    pub shadowed_seqs: Vec<u64>,
    /// `shadowedTokenCount`.
    #[serde(rename = "shadowedTokenCount")]
    pub shadowed_tokens: u64,
    /// Seq of `compaction/start`.
    pub start_seq: Option<u64>,
    /// Seq of `compaction/summary`.
    pub summary_seq: Option<u64>,
    /// Seq of the checkpoint.
    pub checkpoint_seq: Option<u64>,
    /// Seq of `compaction/end`.
    pub end_seq: Option<u64>,
    /// Price of the checkpoint.
    pub checkpoint_tokens: Option<u64>,
    /// Provider usage of the summary call.
    pub usage: Option<Usage>,
    /// HTTP attempts.
    pub attempts: u32,
    /// The error recorded in `compaction/end`.
    pub error: Option<String>,
    /// The request (always built; shown by `--dry-run`).
    #[serde(skip)]
    pub request: Option<WireRequest>,
    /// DSH heuristic price of the summariser request's input (system,
    /// tools, the shadowed messages and the instruction).
    pub request_tokens: u64,
    /// Whether the request's input fits the summarising model's window
    /// (`None`: the window is not known).
    pub fits: Option<bool>,
    /// Image blocks sent as placeholder text ([`Images::Placeholder`]).
    pub images_replaced: u64,
    /// The summary batch (`compaction/summary`, the checkpoint,
    /// `compaction/end`) when the summary was received (and paid for) but
    /// could not be appended: the log was replaced, deleted or changed
    /// meanwhile. The caller keeps it ([`save_unsaved`]) so nothing is lost.
    #[serde(skip)]
    pub unsaved: Option<Vec<OwnedEvent>>,
}

/// The seqs of a bracket's first and last shadowed nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ShadowedRange {
    /// The first.
    pub start: u64,
    /// The last (numerically smaller than `start` when a checkpoint at the
    /// head has a newer seq).
    pub end: u64,
}

/// How a run ended without failing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// At least one checkpoint committed.
    Compacted,
    /// Pressure: below threshold, nothing written.
    BelowThreshold,
    /// Pressure: pruning alone brought it below threshold.
    PrunedBelowThreshold,
    /// Selection returned `null`.
    Declined(Decline),
    /// Dry run: nothing written.
    DryRun,
    /// Overflow with `maxOverflowRetries = 0`: recovery disabled, nothing
    /// written.
    OverflowDisabled,
}

/// What a run did. Also carried by a [`Failure`]: a failed run may have
/// written prune pairs and closed brackets.
#[derive(Debug, Clone)]
pub struct Report {
    /// The semantics that ran.
    pub mode: Mode,
    /// The open turn (the owner of automatic brackets).
    pub open_turn: Option<f64>,
    /// `measure().totalTokens` before anything was written.
    pub tokens_before: Option<f64>,
    /// After pruning (automatic paths).
    pub tokens_after_prune: Option<f64>,
    /// At the end.
    pub tokens_after: Option<f64>,
    /// Surface price before / after.
    pub surface_before: u64,
    /// Surface price at the end.
    pub surface_after: u64,
    /// `replaceGeneration` before.
    pub generation_before: u64,
    /// `replaceGeneration` at the end.
    pub generation_after: u64,
    /// The rewritten tool results (one prune pair each).
    pub pruned: Vec<PrunedResult>,
    /// Brackets, in order.
    pub brackets: Vec<BracketReport>,
    /// Events appended, lifecycle prefix included (or that a dry run would
    /// append before the model call).
    pub appended: Vec<OwnedEvent>,
    /// How it ended (when it did not fail).
    pub outcome: Option<Outcome>,
}

impl Report {
    /// Overflow: whether the failed request may be retried (§2.6).
    pub fn retry_authorized(&self) -> bool {
        self.generation_after > self.generation_before
    }
}

/// Why a run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// A live compaction lock (nothing written).
    Busy,
    /// The mode does not fit the log (open turn / no open turn).
    Mode,
    /// Missing capacity, no summarisation target, bad budgets.
    Config,
    /// Summariser, reply or shrink failure (bracket closed with the error).
    Summary,
    /// The surface changed during summarisation (bracket closed).
    Changed,
    /// A write failed.
    Commit,
    /// Pressure: attempts exhausted while still above threshold.
    StillAboveThreshold,
    /// The surface is corrupt (tool pairing) or a replay rule failed.
    Corrupt,
    /// Cancelled ([`Env::cancel`]): nothing more written, an open bracket
    /// closed with the error `interrupted`.
    Cancelled,
    /// The summariser request cannot be sent on the route (images on a
    /// text-only path): refused before its bracket is written.
    Unsendable,
    /// The summariser request does not fit the summarising model's window:
    /// refused before its bracket is written.
    TooLarge,
}

/// A failed run, with what it wrote.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Class.
    pub kind: FailureKind,
    /// The message (the text recorded in `compaction/end.error` for
    /// bracket failures).
    pub message: String,
    /// The DSH error code, when there is one (`CONTEXT_WINDOW_EXCEEDED`, …).
    pub code: Option<ErrorCode>,
    /// The provider failure, when the model call failed.
    pub provider: Option<ProviderError>,
    /// What was written before and while failing.
    pub report: Box<Report>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// The busy message (§5.1).
const BUSY: &str =
    "compaction: compaction already in progress; the session compaction lock is already active";

/// The "no target" message (§5.6).
const NO_TARGET: &str = "no provider/model available for summarization: set both BasicCompactionConfig summarization fields, route one request, or set both AgentOptions fields";

/// The message of a [`FailureKind::TooLarge`] refusal.
fn too_large_message(request_tokens: u64, target: &(String, String), window: u64) -> String {
    format!(
        "the summariser request ({request_tokens} estimated tokens) does not fit the context window of {}/{} ({window} tokens)",
        target.0, target.1
    )
}

/// The warning for a range whose request does not fit the summarising
/// model's window.
pub fn too_wide_warning(request_tokens: u64, window: f64) -> String {
    format!(
        "the range does not fit the summarising model's window: {request_tokens} > {window} tokens"
    )
}

fn envelope(ty: &str, seq: u64, time: f64, data: OwnedValue) -> OwnedValue {
    Value::obj()
        .with("type", ty.into())
        .with("seq", seq.into())
        .with("time", time.into())
        .with("data", data)
}

fn turn_value(turn: Option<f64>) -> OwnedValue {
    match turn {
        Some(t) => Value::Num(t),
        None => Value::Null,
    }
}

struct Run<'s, 'e, 'a> {
    session: &'s mut Session,
    env: &'e mut Env<'a>,
    opts: &'s Options,
    report: Report,
}

/// A failure inside one step of a run, before it is turned into the
/// public [`Failure`] with the report.
#[derive(Debug)]
struct StepFailure {
    kind: FailureKind,
    message: String,
    code: Option<ErrorCode>,
    provider: Option<ProviderError>,
}

impl StepFailure {
    fn new(kind: FailureKind, message: impl Into<String>) -> Box<StepFailure> {
        Box::new(StepFailure {
            kind,
            message: message.into(),
            code: None,
            provider: None,
        })
    }

    fn coded(kind: FailureKind, message: impl Into<String>, code: ErrorCode) -> Box<StepFailure> {
        Box::new(StepFailure {
            code: Some(code),
            ..*StepFailure::new(kind, message)
        })
    }
}

/// Boxed: the error path is rare and the value is large.
type StepErr = Box<StepFailure>;
type Step<T> = Result<T, StepErr>;

fn fail<T>(kind: FailureKind, message: impl Into<String>) -> Step<T> {
    Err(StepFailure::new(kind, message))
}

fn cancelled() -> StepErr {
    StepFailure::coded(FailureKind::Cancelled, INTERRUPTED, ErrorCode::Aborted)
}

fn provider_failure(e: ProviderError) -> StepErr {
    Box::new(StepFailure {
        kind: FailureKind::Summary,
        message: e.message.clone(),
        code: Some(e.code.clone()),
        provider: Some(e),
    })
}

impl Run<'_, '_, '_> {
    /// Stop at a safe point once cancellation was requested.
    fn check_cancel(&self) -> Step<()> {
        if self.env.cancel.is_cancelled() {
            return Err(cancelled());
        }
        Ok(())
    }

    /// Append a batch, unless cancellation was requested.
    fn write(&mut self, events: Vec<OwnedEvent>) -> Step<()> {
        self.check_cancel()?;
        self.append(events)
    }

    /// Append a batch (also after cancellation: the closing `compaction/end`).
    fn append(&mut self, events: Vec<OwnedEvent>) -> Step<()> {
        let time = (self.env.clock)();
        match self.session.write(events, time) {
            Ok(written) => {
                self.report.appended.extend(written);
                Ok(())
            }
            // Another writer, a changed file, a live lock: nothing written.
            Err(e) if e.is_busy() => fail(FailureKind::Busy, e.to_string()),
            Err(e @ AppendError::Invalid { .. }) => fail(
                FailureKind::Commit,
                format!("refusing to append an invalid batch: {e}"),
            ),
            Err(e) => fail(
                FailureKind::Commit,
                format!("cannot append to the log: {e}"),
            ),
        }
    }

    /// The text of a G3 surface's `system/message` head (its text blocks
    /// joined), or `None` when the surface has no such head.
    fn system_head_text(&self) -> Result<Option<String>, String> {
        let Some(head) = self
            .session
            .surface()
            .nodes
            .first()
            .filter(|n| n.kind == crate::event::Kind::SystemMessage)
        else {
            return Ok(None);
        };
        let lines = self.session.node_lines(&[head.seq]).map_err(|e| e.0)?;
        let text = lines
            .messages()
            .map_err(|e| e.0)?
            .first()
            .and_then(|m| m.get("content"))
            .and_then(|c| c.as_arr())
            .map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| b.get("text").and_then(|t| t.as_jstr()))
                    .map(|t| t.to_lossy().into_owned())
                    .collect::<String>()
            })
            .unwrap_or_default();
        Ok(Some(text))
    }

    /// One pruner pass over the current surface (compaction §3.3).
    fn prune(&mut self) -> Step<()> {
        let Some(cfg) = self.opts.pruner else {
            return Ok(());
        };
        let session = &*self.session;
        // As `dsh prune` plans: results within budget by their length are
        // not read again, the others are read on every core.
        let plan = crate::prune::plan_on(
            session.appender().log(),
            session.surface(),
            session.next_seq(),
            &cfg,
            (self.env.clock)(),
        );
        let plan = match plan {
            Ok(p) => p,
            Err(e) => return fail(FailureKind::Corrupt, e.to_string()),
        };
        if !plan.events.is_empty() {
            self.session.remember_originals(&plan.originals);
            self.write(plan.events)?;
            self.report.pruned.extend(plan.pruned);
        }
        Ok(())
    }

    fn select(&self, retain: u64) -> Step<Selection> {
        range::select_range(&self.session.surface().nodes, retain)
            .map_err(|e| StepFailure::new(FailureKind::Corrupt, e.0))
    }

    fn busy_check(&self) -> Step<()> {
        if self.session.lock().state == LockState::Busy {
            return fail(FailureKind::Busy, BUSY);
        }
        Ok(())
    }

    /// One bracket over `region` (§5). `owner` is the open turn for automatic
    /// brackets, `None` for manual ones.
    fn bracket(&mut self, region: Region, owner: Option<f64>) -> Step<()> {
        let nodes = &self.session.surface().nodes;
        let region = match range::validate_region(nodes, region.start, region.end) {
            Ok(r) => r,
            Err(e) => return fail(FailureKind::Corrupt, e.0),
        };
        let shadowed = region.seqs(nodes);
        let shadowed_tokens = region.tokens(nodes);
        let before: Vec<(u64, u64)> = nodes.iter().map(|n| (n.seq, n.tokens)).collect();
        self.busy_check()?;
        self.mode_check(owner)?;
        let lines = match self.session.node_lines(&shadowed) {
            Ok(l) => l,
            Err(e) => return fail(FailureKind::Corrupt, e.0),
        };
        let (req, images_replaced) = self.summary_request(&lines)?;
        let request_tokens = summary::request_tokens(&req);
        let fits = self.opts.summarizer_window.map(|w| request_tokens <= w);
        let wire = self.env.summarizer.wire_request(&req);
        let mut br = BracketReport {
            compaction_id: String::new(),
            turn: owner,
            shadowed_range: ShadowedRange {
                start: region.start,
                end: region.end,
            },
            shadowed_seqs: shadowed.clone(),
            shadowed_tokens,
            start_seq: None,
            summary_seq: None,
            checkpoint_seq: None,
            end_seq: None,
            checkpoint_tokens: None,
            usage: None,
            attempts: 0,
            error: None,
            request: wire.as_ref().ok().cloned(),
            request_tokens,
            fits,
            images_replaced,
            unsaved: None,
        };
        let refusal = self.refusal(&wire, fits, request_tokens);
        if self.session.is_dry_run() || refusal.is_some() {
            self.report.brackets.push(br);
            return match refusal {
                Some(r) => Err(r),
                None => Ok(()),
            };
        }
        let cid = (self.env.ids)();
        br.compaction_id = cid.clone();
        let start_seq = self.session.next_seq();
        let start = owned_event(
            Kind::CompactionStart,
            start_seq,
            envelope(
                "compaction/start",
                start_seq,
                (self.env.clock)(),
                self.ids_data(&cid, vec![("turn", turn_value(owner))]),
            ),
        );
        // Cancelled before the start: nothing of this bracket is written.
        self.check_cancel()?;
        br.start_seq = Some(start_seq);
        self.report.brackets.push(br);
        let bi = self.report.brackets.len() - 1;
        self.append(vec![start])?;

        let outcome = self.summarise(wire, &req, bi);
        let committed = outcome.and_then(|s| {
            self.stability(&region, &shadowed, &before, owner)?;
            let content = summary::checkpoint_content(&s.summary);
            let framed = summary::framed_price(&content);
            self.report.brackets[bi].checkpoint_tokens = Some(framed);
            if let Some(msg) = summary::shrink_violation(framed, shadowed_tokens) {
                return Err(StepFailure::coded(
                    FailureKind::Summary,
                    msg,
                    ErrorCode::SummaryNotSmaller,
                ));
            }
            self.commit(
                bi,
                &cid,
                owner,
                region,
                &shadowed,
                shadowed_tokens,
                s,
                content,
            )
        });
        if let Err(failure) = committed {
            return self.close_with_error(bi, &cid, owner, *failure);
        }
        Ok(())
    }

    /// An automatic bracket needs an open turn; a manual one, none.
    fn mode_check(&self, owner: Option<f64>) -> Step<()> {
        match (owner, self.session.open_turn()) {
            (Some(_), None) => fail(
                FailureKind::Mode,
                "compactRegion: no open turn \u{2014} automatic compaction events must be enclosed in a turn",
            ),
            (None, Some(_)) => fail(
                FailureKind::Mode,
                "manual compaction: the session already has an open turn",
            ),
            _ => Ok(()),
        }
    }

    /// The summary request for the shadowed `lines`, and how many images
    /// it replaced.
    fn summary_request<'a>(
        &self,
        lines: &'a session::NodeLines,
    ) -> Step<(CompletionRequest<'a>, u64)> {
        let messages = match lines.messages() {
            Ok(m) => m,
            Err(e) => return fail(FailureKind::Corrupt, e.0),
        };
        let (messages, images_replaced) = summary::request_messages(messages, self.opts.images);
        let model = self.opts.target.1.clone();
        let mut req = summary::build_request(
            self.session.headers().header.as_ref(),
            messages,
            &model,
            self.opts.max_tokens,
            self.session.id(),
        );
        // G3: the request leads with the system/message head (compaction
        // §12.2), not a header field.
        match self.system_head_text() {
            Ok(Some(text)) => req.system = (!text.is_empty()).then(|| text.into()),
            Ok(None) => {}
            Err(e) => return fail(FailureKind::Corrupt, e),
        }
        Ok((req, images_replaced))
    }

    /// What is known before the call refuses the bracket before its
    /// compaction/start: a request the route cannot send, or one larger
    /// than the summarising model's window.
    fn refusal(
        &self,
        wire: &Result<WireRequest, ProviderError>,
        fits: Option<bool>,
        request_tokens: u64,
    ) -> Option<StepErr> {
        match (wire, fits) {
            (Err(e), _) => Some(StepFailure::coded(
                FailureKind::Unsendable,
                e.message.clone(),
                e.code.clone(),
            )),
            (Ok(_), Some(false)) => Some(StepFailure::coded(
                FailureKind::TooLarge,
                too_large_message(
                    request_tokens,
                    &self.opts.target,
                    self.opts.summarizer_window.unwrap_or(0),
                ),
                ErrorCode::ContextWindowExceeded,
            )),
            _ => None,
        }
    }

    /// A bracket event's data: its ids, then `extra`.
    fn ids_data(&self, cid: &str, extra: Vec<(&str, OwnedValue)>) -> OwnedValue {
        let mut d = Value::obj().with("compactionId", cid.to_string().into());
        if let Some(s) = &self.opts.source_command_id {
            d = d.with("sourceCommandId", s.clone().into());
        }
        for (k, v) in extra {
            d = d.with(k, v);
        }
        d
    }

    /// Summarise. Nothing is written while the model works.
    fn summarise(
        &mut self,
        wire: Result<WireRequest, ProviderError>,
        req: &CompletionRequest,
        bi: usize,
    ) -> Step<summary::Summary> {
        match wire {
            Err(e) => Err(provider_failure(e)),
            Ok(_) => match self.env.summarizer.complete_cancellable(
                req,
                self.env.progress,
                self.env.cancel,
            ) {
                Err(_) if self.env.cancel.is_cancelled() => Err(cancelled()),
                Err(e) => Err(provider_failure(e)),
                Ok(c) => {
                    self.report.brackets[bi].attempts = c.attempts;
                    self.report.brackets[bi].usage = c.usage.clone();
                    summary::process_reply(c)
                        .map_err(|e| StepFailure::coded(FailureKind::Summary, e.message, e.code))
                }
            },
        }
    }

    /// Close bracket `bi` with the error: the surface is unchanged.
    fn close_with_error(
        &mut self,
        bi: usize,
        cid: &str,
        owner: Option<f64>,
        failure: StepFailure,
    ) -> Step<()> {
        let StepFailure {
            kind,
            message,
            code,
            provider,
        } = failure;
        // Close the bracket with the error; the surface is unchanged.
        let end_seq = self.session.next_seq();
        let end = owned_event(
            Kind::CompactionEnd,
            end_seq,
            envelope(
                "compaction/end",
                end_seq,
                (self.env.clock)(),
                self.ids_data(
                    cid,
                    vec![
                        ("turn", turn_value(owner)),
                        ("error", message.clone().into()),
                    ],
                ),
            ),
        );
        self.report.brackets[bi].error = Some(message.clone());
        match self.append(vec![end]) {
            Ok(()) => self.report.brackets[bi].end_seq = Some(end_seq),
            Err(werr) => {
                // A log replaced or held by another writer stays a
                // busy log (exit 4), whatever the second refusal said.
                let kind = match (kind, werr.kind) {
                    (FailureKind::Busy, FailureKind::Busy) => FailureKind::Busy,
                    _ => FailureKind::Commit,
                };
                let werr = werr.message;
                return Err(Box::new(StepFailure {
                    kind,
                    message: format!(
                        "{message}; and the bracket could not be closed ({werr}): the compaction lock stays held"
                    ),
                    code,
                    provider,
                }));
            }
        }
        Err(Box::new(StepFailure {
            kind,
            message,
            code,
            provider,
        }))
    }

    fn stability(
        &self,
        region: &Region,
        shadowed: &[u64],
        before: &[(u64, u64)],
        owner: Option<f64>,
    ) -> Step<()> {
        let nodes = &self.session.surface().nodes;
        if owner.is_some() {
            let now: Vec<(u64, u64)> = nodes.iter().map(|n| (n.seq, n.tokens)).collect();
            if now != before {
                return fail(
                    FailureKind::Changed,
                    "compaction: session surface changed during summarization",
                );
            }
            return Ok(());
        }
        let Ok(r) = range::validate_region(nodes, region.start, region.end) else {
            return fail(
                FailureKind::Changed,
                "compaction: the selected span is no longer a valid replacement target",
            );
        };
        if r.seqs(nodes) != shadowed {
            return fail(
                FailureKind::Changed,
                "compaction: the selected span changed during summarization",
            );
        }
        let prices_now: Vec<u64> = r.nodes(nodes).iter().map(|n| n.tokens).collect();
        let prices_then: Vec<u64> = before
            .iter()
            .filter(|(s, _)| shadowed.contains(s))
            .map(|x| x.1)
            .collect();
        if prices_now != prices_then {
            return fail(
                FailureKind::Changed,
                "compaction: the selected span was rewritten during summarization",
            );
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn commit(
        &mut self,
        bi: usize,
        cid: &str,
        owner: Option<f64>,
        region: Region,
        shadowed: &[u64],
        shadowed_tokens: u64,
        s: summary::Summary,
        content: Vec<OwnedValue>,
    ) -> Step<()> {
        let (provider, model) = self.opts.target.clone();
        let scid = self.opts.source_command_id.clone();
        let with_ids = |mut d: OwnedValue| {
            d = d.with("compactionId", cid.to_string().into());
            if let Some(s) = &scid {
                d = d.with("sourceCommandId", s.clone().into());
            }
            d
        };
        let start_seq = self.report.brackets[bi].start_seq.unwrap_or(0);
        let summary_seq = self.session.next_seq();
        let mut data = with_ids(Value::obj())
            .with("summary", Value::Arr(s.summary.clone()))
            .with("rawOutput", Value::Arr(s.raw_output))
            .with("llmStreamCall", true.into())
            .with(
                "shadowedRange",
                Value::obj()
                    .with("start", region.start.into())
                    .with("end", region.end.into()),
            )
            .with("shadowedSeqs", shadowed.to_vec().into())
            .with("shadowedTokenCount", shadowed_tokens.into())
            .with("provider", provider.into())
            .with("model", model.into())
            .with("maxTokens", self.opts.max_tokens.into());
        if let Some(u) = &s.usage {
            data = data.with("usage", u.to_value());
        }
        let time = (self.env.clock)();
        let summary_ev = owned_event(
            Kind::CompactionSummary,
            summary_seq,
            envelope("compaction/summary", summary_seq, time, data),
        );
        let cp_seq = summary_seq + 1;
        let mut source = Value::obj()
            .with("kind", "plugin".into())
            .with("plugin", "compact".into());
        source = with_ids(source);
        let mut sources = vec![start_seq, summary_seq];
        sources.extend_from_slice(shadowed);
        let cp = envelope(
            "user/message",
            cp_seq,
            (self.env.clock)(),
            Value::obj()
                .with("content", Value::Arr(content))
                .with("source", source)
                .with("role", "user".into())
                .with("id", (self.env.ids)().into()),
        )
        .with("sourceEventSeqs", sources.into())
        .with(
            "surfaceOp",
            Value::obj()
                .with("op", "replace".into())
                .with("start", region.start.into())
                .with("end", region.end.into()),
        );
        let checkpoint = owned_event(Kind::UserMessage, cp_seq, cp);
        let end_seq = cp_seq + 1;
        let end = owned_event(
            Kind::CompactionEnd,
            end_seq,
            envelope(
                "compaction/end",
                end_seq,
                (self.env.clock)(),
                with_ids(Value::obj()).with("turn", turn_value(owner)),
            ),
        );
        let batch = vec![summary_ev, checkpoint, end];
        if let Err(e) = self.write(batch.clone()) {
            self.report.brackets[bi].unsaved = Some(batch);
            return Err(e);
        }
        let b = &mut self.report.brackets[bi];
        b.summary_seq = Some(summary_seq);
        b.checkpoint_seq = Some(cp_seq);
        b.end_seq = Some(end_seq);
        Ok(())
    }

    fn manual(&mut self) -> Step<Outcome> {
        match self.select(0)? {
            Selection::Declined(d) => Ok(Outcome::Declined(d)),
            Selection::Range(r) => {
                self.bracket(r, None)?;
                Ok(self.done())
            }
        }
    }

    fn done(&self) -> Outcome {
        if self.session.is_dry_run() {
            Outcome::DryRun
        } else {
            Outcome::Compacted
        }
    }

    /// `measure().totalTokens` of the current view.
    fn total(&self) -> Step<f64> {
        self.session
            .total_tokens()
            .map_err(|e| StepFailure::new(FailureKind::Corrupt, e.to_string()))
    }

    fn pressure(&mut self, turn: f64) -> Step<Outcome> {
        let Some(threshold) = self.opts.threshold_tokens else {
            return fail(
                FailureKind::Config,
                "pressure compaction needs the routed target's threshold (configure contextWindow)",
            );
        };
        let threshold_f = threshold as f64;
        let m0 = self.total()?;
        self.busy_check()?;
        if m0 < threshold_f {
            return Ok(Outcome::BelowThreshold);
        }
        self.prune()?;
        let m1 = self.total()?;
        self.report.tokens_after_prune = Some(m1);
        if m1 < threshold_f {
            return Ok(if self.report.pruned.is_empty() {
                Outcome::BelowThreshold
            } else {
                Outcome::PrunedBelowThreshold
            });
        }
        let attempts = self.opts.compaction_retries + 1;
        let mut total = m1;
        for attempt in 0..attempts {
            match self.select(self.opts.retain_tokens)? {
                Selection::Declined(d) if attempt == 0 => return Ok(Outcome::Declined(d)),
                Selection::Declined(_) => break,
                Selection::Range(r) => self.bracket(r, Some(turn))?,
            }
            if self.session.is_dry_run() {
                return Ok(Outcome::DryRun);
            }
            total = self.total()?;
            if total < threshold_f {
                return Ok(Outcome::Compacted);
            }
        }
        let mut shown = String::new();
        crate::json::js_number(total, &mut shown);
        fail(
            FailureKind::StillAboveThreshold,
            format!(
                "compaction still above threshold after {attempts} compaction attempts ({shown} estimated tokens >= threshold {threshold})"
            ),
        )
    }

    fn overflow(&mut self, turn: f64) -> Step<Outcome> {
        if self.opts.max_overflow_retries == 0 {
            return Ok(Outcome::OverflowDisabled);
        }
        self.busy_check()?;
        self.prune()?;
        self.report.tokens_after_prune = Some(self.total()?);
        match self.select(0)? {
            Selection::Declined(d) => Ok(Outcome::Declined(d)),
            Selection::Range(r) => {
                self.bracket(r, Some(turn))?;
                Ok(self.done())
            }
        }
    }
}

/// Run one compaction over `session`, appending through its writer.
///
/// A session opened as a dry run ([`crate::append::AppendTarget::DryRun`])
/// validates and folds the prune pairs so the selection is the one a real
/// run would make, builds the request (weighed against the summarising
/// model's window), then stops before `compaction/start`: nothing is
/// written and no one is called. It fails as the real run would before the
/// call ([`FailureKind::Unsendable`], [`FailureKind::TooLarge`]).
pub fn run(
    session: &mut Session,
    env: &mut Env<'_>,
    opts: &Options,
) -> Result<Report, Box<Failure>> {
    let open_turn = session.open_turn();
    let dry_run = session.is_dry_run();
    // An explicit mode is held to its own rules below (the reference's
    // compactNow / compactIfNeeded refuse the wrong tail); only Auto is
    // decided by the tail.
    let mode = match opts.mode {
        Mode::Auto => plan::mode_for_tail(Mode::Auto, open_turn),
        m => m,
    };
    let report = Report {
        mode,
        open_turn,
        tokens_before: session.total_tokens().ok(),
        tokens_after_prune: None,
        tokens_after: None,
        surface_before: session.surface().tokens,
        surface_after: session.surface().tokens,
        generation_before: session.surface().replace_generation,
        generation_after: session.surface().replace_generation,
        pruned: Vec::new(),
        brackets: Vec::new(),
        appended: Vec::new(),
        outcome: None,
    };
    let mut r = Run {
        session,
        env,
        opts,
        report,
    };
    let result = match (mode, open_turn) {
        (Mode::Manual, Some(_)) => fail(
            FailureKind::Mode,
            "manual compaction: the session already has an open turn",
        ),
        (Mode::Pressure | Mode::Overflow, None) => fail(
            FailureKind::Mode,
            "compactRegion: no open turn \u{2014} automatic compaction events must be enclosed in a turn",
        ),
        (Mode::Manual, None) => r.busy_check().and_then(|_| r.manual()),
        (Mode::Pressure, Some(t)) => r.pressure(t),
        (Mode::Overflow, Some(t)) => r.overflow(t),
        (Mode::Auto, _) => unreachable!("resolved above"),
    };
    let mut report = r.report;
    report.tokens_after = r.session.total_tokens().ok();
    report.surface_after = r.session.surface().tokens;
    report.generation_after = r.session.surface().replace_generation;
    match result {
        Ok(outcome) => {
            report.outcome = Some(if dry_run {
                match outcome {
                    Outcome::Compacted => Outcome::DryRun,
                    o => o,
                }
            } else {
                outcome
            });
            Ok(report)
        }
        Err(failure) => {
            let StepFailure {
                kind,
                message,
                code,
                provider,
            } = *failure;
            Err(Box::new(Failure {
                kind,
                message,
                code,
                provider,
                report: Box::new(report),
            }))
        }
    }
}
