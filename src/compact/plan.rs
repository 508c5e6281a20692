//! What a compaction run will do, decided before anything is written: the
//! mode for the log's tail, the summarisation target and its wire settings,
//! and (for pressure) the capacity and budgets of the routed target.
//!
//! Everything here is resolved from three sources, most specific first:
//! the caller's explicit choices ([`PlanInputs`], typically flags), the dsh
//! config ([`Config`]), and the log itself (its routed target and logged
//! context windows). The library reads no environment variable; a caller
//! that honours `$DEEPSEEK_BASE_URL` passes it as
//! [`PlanInputs::default_base_url`].

use std::path::PathBuf;

use crate::config::Config;
use crate::json::Value;
use crate::policy::{Budgets, Capacity, CapacityInputs, Policy, Retention, resolve_capacity};
use crate::provider::Protocol;
use crate::prune::PruneConfig;

use super::session::Session;
use super::{Mode, NO_TARGET};

/// The DeepSeek API root used when neither the caller nor the config names one.
pub const DEFAULT_BASE_URL: &str = "https://api.deepseek.com";

/// The variable that holds the API key when neither the caller nor the
/// config names one.
pub const DEFAULT_API_KEY_ENV: &str = "DEEPSEEK_API_KEY";

/// The mode a run takes on a log whose last turn is `open_turn`.
///
/// A closed tail allows only manual compaction (maintenance of a resumed
/// session), whatever was asked; an open turn takes the requested automatic
/// path, `Auto` meaning pressure.
pub fn mode_for_tail(requested: Mode, open_turn: Option<f64>) -> Mode {
    match (requested, open_turn) {
        (_, None) => Mode::Manual,
        (Mode::Auto, Some(_)) => Mode::Pressure,
        (m, Some(_)) => m,
    }
}

/// The caller's explicit choices; `None` means "from the config, else the
/// log, else the default".
#[derive(Debug, Clone, Default)]
pub struct PlanInputs {
    /// The requested mode (see [`mode_for_tail`]); `None` is `Auto`.
    pub mode: Option<Mode>,
    /// The summarisation target as `PROVIDER/MODEL`.
    pub route: Option<String>,
    /// The wire protocol.
    pub protocol: Option<Protocol>,
    /// The API root.
    pub base_url: Option<String>,
    /// The DeepSeek API root to use when nothing else names one (the
    /// harness reads it from `$DEEPSEEK_BASE_URL`).
    pub default_base_url: Option<String>,
    /// The name of the variable that holds the key.
    pub api_key_env: Option<String>,
    /// `reasoning_effort` for the summariser call.
    pub reasoning_effort: Option<String>,
    /// The routed target's context window.
    pub context_window: Option<u64>,
    /// Policy overrides.
    pub threshold_ratio: Option<f64>,
    /// Policy override: the retained tail as a share of the window.
    pub retain_ratio: Option<f64>,
    /// Policy override: the retained tail in tokens.
    pub retain_tokens: Option<u64>,
    /// Policy override: the summary's output cap.
    pub max_tokens: Option<u64>,
    /// Policy override: compaction retries while still over the threshold.
    pub compaction_retries: Option<u64>,
    /// Policy override: overflow retries.
    pub max_overflow_retries: Option<u64>,
}

/// Everything resolved from the inputs, the config and the log.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The mode for this log's tail.
    pub mode: Mode,
    /// Summarisation target (provider, model).
    pub target: (String, String),
    /// The log's routed target.
    pub routed: Option<(String, String)>,
    /// The policy for the routed target, overrides applied.
    pub policy: Policy,
    /// Pressure only: the routed target's capacity.
    pub capacity: Option<Capacity>,
    /// Pressure only: the budgets from that capacity.
    pub budgets: Option<Budgets>,
    /// Wire protocol of the summarisation target.
    pub protocol: Protocol,
    /// Its API root.
    pub base_url: String,
    /// The variable that holds its key (the key itself is never in a plan).
    pub key_env: String,
    /// `reasoning_effort`, when set.
    pub reasoning_effort: Option<String>,
    /// The config file read, if any.
    pub config_path: Option<PathBuf>,
    /// The pruner's settings.
    pub pruner: PruneConfig,
}

/// Why no plan can be made: a usage problem (a flag, the config or the
/// log lacks something), reported before anything is written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

fn check_ratio(flag: &str, v: Option<f64>) -> Result<Option<f64>, PlanError> {
    match v {
        Some(r) if !(r.is_finite() && r > 0.0 && r <= 1.0) => {
            Err(PlanError(format!("{flag} {r}: must be a number in (0, 1]")))
        }
        v => Ok(v),
    }
}

/// `PROVIDER/MODEL` as a pair.
pub fn split_route(s: &str) -> Result<(String, String), PlanError> {
    match s.split_once('/') {
        Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok((p.to_string(), m.to_string())),
        _ => Err(PlanError(format!(
            "--route must be PROVIDER/MODEL, got \"{s}\""
        ))),
    }
}

/// The policy of the routed target from the config, overrides applied.
fn resolve_policy(
    inputs: &PlanInputs,
    config: &Config,
    routed: Option<&(String, String)>,
) -> Result<Policy, PlanError> {
    let (p, m) = routed.cloned().unwrap_or_default();
    let mut policy = config.policy_for(&p, &m);
    if let Some(t) = check_ratio("--threshold-ratio", inputs.threshold_ratio)? {
        policy.threshold_ratio = t;
    }
    if let Some(r) = check_ratio("--retain-ratio", inputs.retain_ratio)? {
        policy.retention = Retention::Ratio(r);
    }
    if let Some(t) = inputs.retain_tokens {
        policy.retention = Retention::Tokens(t);
    }
    if let Retention::Ratio(r) = policy.retention
        && r >= policy.threshold_ratio
    {
        return Err(PlanError(format!(
            "retainRatio ({}) must be less than the resolved thresholdRatio ({})",
            Value::from(r).to_json(),
            Value::from(policy.threshold_ratio).to_json()
        )));
    }
    if let Some(t) = inputs.max_tokens {
        if t == 0 {
            return Err(PlanError("--max-tokens must be a positive integer".into()));
        }
        policy.max_tokens = t;
    }
    if let Some(n) = inputs.compaction_retries {
        policy.compaction_retries = n;
    }
    if let Some(n) = inputs.max_overflow_retries {
        policy.max_overflow_retries = n;
    }
    Ok(policy)
}

/// Decide what a compaction of `session` will do.
///
/// ```
/// use dsh::append::{AppendOptions, AppendTarget};
/// use dsh::compact::{Mode, Session, plan::{PlanInputs, plan}};
/// use dsh::config::Config;
///
/// let src = dsh::LogSource::File("samples/compacted.jsonl".into());
/// let session = Session::open(&src, AppendTarget::DryRun, &AppendOptions::default()).unwrap();
/// let inputs = PlanInputs { route: Some("deepseek/deepseek-chat".into()), ..Default::default() };
/// let plan = plan(&inputs, &Config::default(), &session).unwrap();
/// // The last turn is closed: maintenance (manual) compaction, default wire settings.
/// assert_eq!(plan.mode, Mode::Manual);
/// assert_eq!(plan.base_url, "https://api.deepseek.com");
/// assert_eq!(plan.key_env, "DEEPSEEK_API_KEY");
/// ```
pub fn plan(inputs: &PlanInputs, config: &Config, session: &Session) -> Result<Plan, PlanError> {
    let mode = mode_for_tail(inputs.mode.unwrap_or(Mode::Auto), session.open_turn());
    let routed = session.headers().route();
    let policy = resolve_policy(inputs, config, routed.as_ref())?;
    let target = match &inputs.route {
        Some(r) => split_route(r)?,
        None if !policy.summarization_provider.is_empty() => (
            policy.summarization_provider.clone(),
            policy.summarization_model.clone(),
        ),
        None => routed
            .clone()
            .filter(|(p, m)| !p.is_empty() && !m.is_empty())
            .ok_or_else(|| PlanError(NO_TARGET.to_string()))?,
    };
    let (mut capacity, mut budgets) = (None, None);
    if mode == Mode::Pressure {
        let (p, m) = routed
            .clone()
            .filter(|(p, m)| !p.is_empty() && !m.is_empty())
            .ok_or_else(|| {
                PlanError(
                    "pressure compaction needs a routed target (no request/header in the log)"
                        .into(),
                )
            })?;
        let (config_model, config_route_default) = config.configured_capacity(&p, &m);
        let logged = session
            .measure()
            .ok()
            .and_then(|x| x.logged_context_window(&p, &m))
            .map(|l| l.0);
        let capacity_inputs = CapacityInputs {
            flag: inputs.context_window,
            config_model,
            logged,
            config_route_default,
        };
        let c = resolve_capacity(&p, &capacity_inputs)
            .ok_or_else(|| PlanError(crate::policy::no_capacity_message(&p, &m)))?;
        let b = policy
            .budgets(c.context_window)
            .map_err(|e| PlanError(e.message))?;
        capacity = Some(c);
        budgets = Some(b);
    }
    let route_cfg = config.route_config(&target.0);
    let protocol = inputs
        .protocol
        .or_else(|| route_cfg.map(|r| r.kind))
        .unwrap_or(Protocol::DeepSeek);
    let base_url = match inputs
        .base_url
        .clone()
        .or_else(|| route_cfg.and_then(|r| r.base_url.clone()))
    {
        Some(u) => u,
        None => {
            let root = inputs
                .default_base_url
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| DEFAULT_BASE_URL.into());
            match protocol {
                Protocol::DeepSeek => root,
                Protocol::Anthropic => format!("{}/anthropic", root.trim_end_matches('/')),
            }
        }
    };
    let key_env = inputs
        .api_key_env
        .clone()
        .or_else(|| route_cfg.and_then(|r| r.api_key_env.clone()))
        .unwrap_or_else(|| DEFAULT_API_KEY_ENV.into());
    if !is_env_name(&key_env) {
        // Never echoed: a key pasted where its variable's name goes.
        return Err(PlanError(
            "apiKeyEnv / --api-key-env must be the NAME of an environment variable (letters, digits and _, not starting with a digit), not the key itself; the value given is not shown"
                .into(),
        ));
    }
    let reasoning_effort = inputs
        .reasoning_effort
        .clone()
        .or_else(|| route_cfg.and_then(|r| r.reasoning_effort.clone()));
    let p = config.pruner;
    Ok(Plan {
        mode,
        target,
        routed,
        policy,
        capacity,
        budgets,
        protocol,
        base_url,
        key_env,
        reasoning_effort,
        config_path: config.path.clone(),
        pruner: PruneConfig {
            threshold_chars: p.threshold_chars,
            head_chars: p.head_chars,
            tail_chars: p.tail_chars,
        },
    })
}

/// A portable environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_env_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_variable_names_name_the_key() {
        assert!(is_env_name("DEEPSEEK_API_KEY"));
        assert!(is_env_name("_k1"));
        for bad in ["", "sk-abc123", "1KEY", "A B", "$KEY", "KEY=x"] {
            assert!(!is_env_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_closed_tail_is_always_manual_and_auto_means_pressure() {
        for m in [Mode::Auto, Mode::Manual, Mode::Pressure, Mode::Overflow] {
            assert_eq!(mode_for_tail(m, None), Mode::Manual);
        }
        assert_eq!(mode_for_tail(Mode::Auto, Some(3.0)), Mode::Pressure);
        assert_eq!(mode_for_tail(Mode::Overflow, Some(3.0)), Mode::Overflow);
        assert_eq!(mode_for_tail(Mode::Manual, Some(3.0)), Mode::Manual);
    }

    #[test]
    fn routes_and_ratios_are_checked() {
        assert_eq!(
            split_route("deepseek/deepseek-chat").unwrap(),
            ("deepseek".into(), "deepseek-chat".into())
        );
        assert!(split_route("deepseek").is_err());
        assert!(split_route("/m").is_err());
        assert!(check_ratio("--x", Some(0.0)).is_err());
        assert!(check_ratio("--x", Some(f64::NAN)).is_err());
        assert_eq!(check_ratio("--x", Some(1.0)), Ok(Some(1.0)));
    }
}
