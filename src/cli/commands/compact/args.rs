//! `dsh compact`'s flags, and what they mean for the library.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use dsh::compact::plan::PlanInputs;
use dsh::compact::{self, Mode};
use dsh::provider::Protocol;

/// Compact a session log: summarise its oldest history through a model and
/// replace it with one checkpoint.
///
/// The log's tail decides the semantics and the lifecycle of the write:
///
/// * last turn closed → manual compaction (owner `null`, keeps only the
///   newest indivisible unit, no pruning, one bracket). It is maintenance of
///   a resumed session, so the write starts a new lifecycle: the
///   `session/end-seed` marker first (unless the log already ends with one),
///   then the bracket with `turn: null`.
///
/// * last turn open → automatic compaction, continuing that live turn: no
///   crash-repair closers, no end-seed; the prune pairs and the bracket
///   (owned by the open turn) land where the agent would have written them.
///   `--mode pressure` (default: only when the routed target is at or over
///   its threshold; prunes oversized tool results first, keeps the
///   recent-tail budget, retries while still over) or `--mode overflow`
///   (prune, then one maximal head reduction; `maxOverflowRetries = 0`
///   disables it).
///
/// `compaction/start` is written before the model is called; every failure
/// closes the bracket with its error and leaves the surface unchanged. Writes
/// go through dsh's append-only writer: an exclusive lock, complete lines
/// (or one Zstandard frame per batch for `.jsonl.zstd`), refusal of a torn
/// tail, a damaged region, a live compaction lock or another writer. If a
/// compaction crashed between start and end, `dsh locks --release --yes LOG`
/// ends its lock the way a resuming harness does.
///
/// Settings come from the dsh config (`--config FILE`, else `$DSH_CONFIG`,
/// else `$XDG_CONFIG_HOME/dsh/config.toml`, else `~/.config/dsh/config.toml`),
/// flags overriding: `[compaction]` (thresholdRatio, retainRatio or
/// retainTokens, maxTokens, compactionRetries, maxOverflowRetries,
/// summarizationProvider/Model, modelPolicies for the routed target),
/// `[pruner]` (thresholdChars, headChars, tailChars) and the summarisation
/// target's `[[routes]]` entry (kind, baseURL, apiKeyEnv, reasoningEffort;
/// the routed target's contextWindow). The summarisation target is
/// `--route`, else the config's summarization pair, else the route of the
/// latest request/header. The API key is read from the environment variable
/// the route names (default `DEEPSEEK_API_KEY`) and is never printed or
/// written.
///
/// With --json: `{"mode", "lifecycle", "outcome", "route", "routedTarget",
/// "openTurn", "contextWindow", "contextWindowSource", "thresholdTokens",
/// "retainTokens", "policy", "summarizer", "config", "tokensBefore",
/// "tokensAfterPrune", "tokensAfter", "surfaceTokensBefore",
/// "surfaceTokensAfter", "replaceGenerationBefore", "replaceGenerationAfter",
/// "pruned": [{originalSeq, replacementSeq, callId, charsBefore,
/// charsAfter}], "brackets": [{compactionId, turn, shadowedRange,
/// shadowedSeqs, shadowedTokenCount, startSeq, summarySeq, checkpointSeq,
/// endSeq, checkpointTokens, usage, attempts, error, request?}],
/// "appendedSeqs", "endSeedSeq", "declined"?, "retryAuthorized"?,
/// "wouldAppend"?, "wouldFail"? (dry runs: [{message, hint}]),
/// "summarizerWindow": {tokens, source} | null, "warnings" (a range that
/// does not fit that window), "error"?: {message, kind,
/// code, hint?}, "file", "session", "schema_version"}`; each bracket also has "requestTokens",
/// "fits" and "imagesReplaced". A refusal before the first byte prints
/// `{"file", "written": false, "error": {message, kind, hint}, "schema_version"}`.
///
/// Before the first byte a real run checks that the log is writable, the API
/// key variable is set and non-empty, the target has a route (a [[routes]]
/// entry, the built-in deepseek-official, or --base-url), the base URL
/// parses (each exit 2), and, playing the run dry, that the request can be
/// sent (images need --images placeholder on the text-only routes) and
/// fits the summarising model's window when known (exit 1), and that the
/// provider's host accepts a connection (exit 2): one error line,
/// one hint, nothing appended. --images placeholder (a dsh extension) sends
/// each image as the harness's image-offload placeholder text. A dry run
/// reports the request's tokens against that window (a warning when they do
/// not fit) and everything the real run would fail at as "would fail: …"
/// (exit 1; never 5).
///
/// Exit status: 0 done (also when nothing needed doing), 1 the surface
/// changed, pressure remains, or the request cannot be sent or does not fit
/// (nothing written), 2 usage/configuration, 3 invalid log,
/// 4 compaction lock held or the log busy (see `dsh locks`), 5 summarisation
/// failed (the failed bracket is recorded in the log), 70 a write failed,
/// 130 / 143 / 129 stopped by SIGINT (Ctrl-C) / SIGTERM / SIGHUP. A signal
/// after `compaction/start` stops the model call and closes the bracket with
/// one `compaction/end {error: "interrupted"}`, so no lock is left held;
/// before it, nothing more is written.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dsh compact -n --route deepseek/deepseek-chat session.jsonl\n  dsh compact --route deepseek/deepseek-chat session.jsonl\n  dsh compact --mode pressure --wait 30 --json 5b1d\n  dsh compact --out copy.jsonl --route deepseek/deepseek-chat s.jsonl"
)]
pub struct CompactArgs {
    /// The session log: a file, `-`, a session directory or id, or a working
    /// directory (`.`: its project's newest session by its last event, said
    /// on stderr).
    pub log: String,
    /// Summarisation target `PROVIDER/MODEL` (default: the config's
    /// summarization pair, else the route of the latest request/header).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub route: Option<String>,
    /// Semantics for a log with an open turn (ignored otherwise: manual).
    #[arg(long, value_enum, default_value_t = ModeArg::Auto)]
    pub mode: ModeArg,
    /// Show the range, the tokens it would shadow and the exact request;
    /// call no one, write nothing (events it would append are stamped with
    /// the log's last event time, so the output is reproducible).
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// Write to a copy of the log at FILE (must not exist) instead of the log.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The dsh config file (default: $DSH_CONFIG, else
    /// $XDG_CONFIG_HOME/dsh/config.toml, else ~/.config/dsh/config.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Wire protocol of the route (default: the route's `kind`, else deepseek).
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
    /// Base URL (default: the route's `baseURL`, else `$DEEPSEEK_BASE_URL`,
    /// else `https://api.deepseek.com`, plus `/anthropic` for `--kind
    /// anthropic`).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Environment variable holding the API key (default: the route's
    /// `apiKeyEnv`, else DEEPSEEK_API_KEY).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Reasoning effort for the summary call (`off`, `low`, `high`, `max`;
    /// default: the route's `reasoningEffort`, else `high`).
    #[arg(long, value_name = "EFFORT")]
    pub reasoning_effort: Option<String>,
    /// Context window of the routed target (default: the config's model
    /// entry, else the latest matching request/context, else the config's
    /// route default, else 1000000 for deepseek-official).
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// `thresholdRatio` (default: the config's, else 0.8).
    #[arg(long, value_name = "RATIO")]
    pub threshold_ratio: Option<f64>,
    /// `retainRatio` (mutually exclusive with --retain-tokens; default: the
    /// config's, else 0.16).
    #[arg(long, value_name = "RATIO", conflicts_with = "retain_tokens")]
    pub retain_ratio: Option<f64>,
    /// `retainTokens`: absolute recent-tail budget.
    #[arg(long, value_name = "TOKENS")]
    pub retain_tokens: Option<u64>,
    /// `maxTokens`: the summary generation cap (default: the config's, else 8192).
    #[arg(long, value_name = "TOKENS")]
    pub max_tokens: Option<u64>,
    /// `compactionRetries`: extra pressure attempts (default: the config's, else 1).
    #[arg(long, value_name = "N")]
    pub compaction_retries: Option<u64>,
    /// `maxOverflowRetries`: 0 disables `--mode overflow` (default: the
    /// config's, else 1).
    #[arg(long, value_name = "N")]
    pub max_overflow_retries: Option<u64>,
    /// `sourceCommandId` to record (manual compaction).
    #[arg(long, value_name = "ID")]
    pub source_command_id: Option<String>,
    /// Stream idle timeout in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300.0)]
    pub timeout: f64,
    /// Retries after HTTP 429 / 5xx / connection failures.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries: u32,
    /// First retry delay in seconds (doubles per retry).
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub retry_delay: f64,
    /// Wait up to SECONDS for another dsh writer holding the log.
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<f64>,
    /// Images in the summarised range: `refuse` (the reference: a
    /// text-only route cannot send them, so nothing is written) or
    /// `placeholder` (a dsh extension: each image is sent as the harness's
    /// image-offload placeholder text, so the summariser knows one was
    /// there).
    #[arg(long, value_enum, default_value_t = ImagesArg::Refuse)]
    pub images: ImagesArg,
    /// Context window of the summarising model (default: --context-window
    /// when it is the routed target, else the config's model entry, else
    /// the latest matching request/context, else the route default, else
    /// 1000000 for deepseek-official).
    #[arg(long, value_name = "TOKENS")]
    pub summarizer_context_window: Option<u64>,
}

/// `--images`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImagesArg {
    /// Refuse a range with images (nothing is written).
    Refuse,
    /// Send each image as the image-offload placeholder text.
    Placeholder,
}

/// `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Manual without an open turn, pressure with one.
    Auto,
    /// Threshold, prune, retain budget, retries.
    Pressure,
    /// Prune, retain 0, one bracket.
    Overflow,
}

/// `--kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// DeepSeek chat completions.
    Deepseek,
    /// Anthropic-compatible Messages.
    Anthropic,
}

impl From<ImagesArg> for compact::Images {
    fn from(a: ImagesArg) -> compact::Images {
        match a {
            ImagesArg::Refuse => compact::Images::Refuse,
            ImagesArg::Placeholder => compact::Images::Placeholder,
        }
    }
}

impl CompactArgs {
    /// The flags as the library's plan inputs.
    pub fn plan_inputs(&self) -> PlanInputs {
        PlanInputs {
            mode: Some(match self.mode {
                ModeArg::Auto => Mode::Auto,
                ModeArg::Pressure => Mode::Pressure,
                ModeArg::Overflow => Mode::Overflow,
            }),
            route: self.route.clone(),
            protocol: self.kind.map(|k| match k {
                KindArg::Deepseek => Protocol::DeepSeek,
                KindArg::Anthropic => Protocol::Anthropic,
            }),
            base_url: self.base_url.clone(),
            default_base_url: std::env::var("DEEPSEEK_BASE_URL").ok(),
            api_key_env: self.api_key_env.clone(),
            reasoning_effort: self.reasoning_effort.clone(),
            context_window: self.context_window,
            threshold_ratio: self.threshold_ratio,
            retain_ratio: self.retain_ratio,
            retain_tokens: self.retain_tokens,
            max_tokens: self.max_tokens,
            compaction_retries: self.compaction_retries,
            max_overflow_retries: self.max_overflow_retries,
            summarizer_context_window: self.summarizer_context_window,
        }
    }
}
