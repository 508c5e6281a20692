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
use std::time::Duration;

use crate::config::Config;
use crate::json::Value;
use crate::policy::{Budgets, Capacity, Policy, Retention};
use crate::provider::{ApiKey, Endpoint, HttpSummarizer, Protocol};
use crate::prune::PruneConfig;

use super::session::Session;
use super::{Images, Mode, NO_TARGET, Options};

/// The DeepSeek API root used when neither the caller nor the config names one.
const DEFAULT_BASE_URL: &str = "https://api.deepseek.com";

/// The variable that holds the API key when neither the caller nor the
/// config names one.
const DEFAULT_API_KEY_ENV: &str = "DEEPSEEK_API_KEY";

/// The mode a run takes on a log whose last turn is `open_turn`.
///
/// A closed tail allows only manual compaction (maintenance of a resumed
/// session), whatever was asked; an open turn takes the requested automatic
/// path, `Auto` meaning pressure.
pub(crate) fn mode_for_tail(requested: Mode, open_turn: Option<f64>) -> Mode {
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
    /// The requested mode (see `mode_for_tail`); `None` is `Auto`.
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
    /// The routed target's context window (also the summarising model's
    /// when it is the routed target).
    pub context_window: Option<u64>,
    /// The summarising model's context window.
    pub summarizer_context_window: Option<u64>,
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
    /// The summarising model's context window, when known (flags, the
    /// config's model or route entry, the latest matching logged
    /// `request/context`, the built-in DeepSeek default).
    pub summarizer_capacity: Option<Capacity>,
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

impl Plan {
    /// What the engine is to do under this plan ([`super::run`]'s options):
    /// its mode, budgets, policy, target, pruner and summariser window, with
    /// the run's `sourceCommandId` and image handling.
    pub fn options(&self, source_command_id: Option<String>, images: Images) -> Options {
        Options {
            mode: self.mode,
            threshold_tokens: self.budgets.map(|b| b.threshold_tokens),
            retain_tokens: self.budgets.map_or(0, |b| b.retain_tokens),
            compaction_retries: self.policy.compaction_retries,
            max_tokens: self.policy.max_tokens,
            target: self.target.clone(),
            source_command_id,
            pruner: Some(self.pruner),
            max_overflow_retries: self.policy.max_overflow_retries,
            images,
            summarizer_window: self.summarizer_capacity.map(|c| c.context_window as u64),
        }
    }

    /// The summariser this plan names, with the key, the retries after a
    /// transient failure and the timing (idle timeout, first retry delay).
    pub fn summarizer(
        &self,
        key: ApiKey,
        retries: u32,
        timing: (Duration, Duration),
    ) -> HttpSummarizer {
        let mut endpoint = Endpoint::new(self.protocol, self.base_url.clone(), key);
        endpoint.reasoning_effort = self.reasoning_effort.clone();
        endpoint.idle_timeout = timing.0.max(Duration::from_millis(1));
        endpoint.max_retries = retries;
        endpoint.retry_base = timing.1;
        HttpSummarizer { endpoint }
    }
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
fn split_route(s: &str) -> Result<(String, String), PlanError> {
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
        let logged = session
            .measure()
            .ok()
            .and_then(|x| x.logged_context_window(&p, &m))
            .map(|l| l.0);
        let c = config
            .capacity(&p, &m, inputs.context_window, logged)
            .ok_or_else(|| PlanError(crate::policy::no_capacity_message(&p, &m)))?;
        let b = policy
            .budgets(c.context_window)
            .map_err(|e| PlanError(e.message))?;
        capacity = Some(c);
        budgets = Some(b);
    }
    let summarizer_capacity = {
        let (p, m) = &target;
        let flag = inputs.summarizer_context_window.or_else(|| {
            inputs
                .context_window
                .filter(|_| routed.as_ref() == Some(&target))
        });
        let logged = session
            .measure()
            .ok()
            .and_then(|x| x.logged_context_window(p, m))
            .map(|l| l.0);
        config.capacity(p, m, flag, logged)
    };
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
    Ok(Plan {
        mode,
        target,
        routed,
        policy,
        capacity,
        budgets,
        summarizer_capacity,
        protocol,
        base_url,
        key_env,
        reasoning_effort,
        config_path: config.path.clone(),
        pruner: config.pruner,
    })
}

/// Something a run would refuse before writing its first byte, with the
/// next step.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Problem {
    /// What is wrong (never the key, never a URL's userinfo).
    pub message: String,
    /// What to do, one line.
    pub hint: String,
}

/// The configuration checks a compaction makes before it writes anything:
/// the API key variable is set and non-empty (`key`: its value, as the
/// caller read it), the summarisation target has wire settings (a
/// `[[routes]]` entry, the built-in `deepseek-official`, or an explicit
/// base URL), and the base URL parses.
pub fn preflight(
    plan: &Plan,
    config: &Config,
    inputs: &PlanInputs,
    key: Option<&str>,
) -> Vec<Problem> {
    let mut out = Vec::new();
    let var = &plan.key_env;
    match key {
        None => out.push(Problem {
            message: format!("no API key: ${var} is not set"),
            hint: format!(
                "export {var}=<your key> (read from the environment only), or name another variable with --api-key-env or the route's apiKeyEnv"
            ),
        }),
        Some("") => out.push(Problem {
            message: format!("no API key: ${var} is empty"),
            hint: format!("put the key in {var}, or name another variable with --api-key-env"),
        }),
        Some(_) => {}
    }
    let provider = &plan.target.0;
    if config.route_config(provider).is_none()
        && provider != crate::policy::DEEPSEEK_PROVIDER
        && inputs.base_url.is_none()
    {
        let where_ = config
            .path
            .as_ref()
            .map_or_else(|| "the dsh config".to_string(), |p| p.display().to_string());
        out.push(Problem {
            message: format!(
                "no route for provider \"{provider}\": {where_} has no [[routes]] entry for it, so dsh does not know where to send the request"
            ),
            hint: format!(
                "add [[routes]] provider = \"{provider}\" (with kind, baseURL, apiKeyEnv) to {where_}, or pass --base-url URL (and --kind)"
            ),
        });
    }
    if let Err(why) = check_base_url(&plan.base_url) {
        out.push(Problem {
            message: format!(
                "the base URL {} does not parse: {why}",
                crate::provider::redact_url(&plan.base_url)
            ),
            hint: "give an http:// or https:// URL such as https://api.deepseek.com (--base-url, or baseURL in the route)".into(),
        });
    }
    out
}

/// Whether `url` is an absolute `http`/`https` URL with a host (and a
/// numeric port, if any).
fn check_base_url(url: &str) -> Result<(), PlanError> {
    base_url_problem(url).map_err(PlanError)
}

fn base_url_problem(url: &str) -> Result<(), String> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("it contains spaces or control characters".into());
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err("it has no scheme (expected http:// or https://)".into());
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(format!("the scheme {scheme:?} is not http or https"));
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, rest)) => (h, rest.strip_prefix(':')),
            None => return Err("an IPv6 host lacks its closing ]".into()),
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return Err("it has no host".into());
    }
    if let Some(p) = port
        && (p.is_empty() || p.parse::<u16>().is_err())
    {
        return Err(format!("the port {p:?} is not a number from 0 to 65535"));
    }
    Ok(())
}

/// What is risky about sending the API key to `url` (which passed
/// `check_base_url`): a link-local or cloud metadata host (169.254.0.0/16
/// such as 169.254.169.254, fe80::/10, fd00:ec2::254, 100.100.100.200,
/// metadata.google.internal), or plain `http` to a host that is not this
/// machine (the key would cross the network unencrypted). Empty when
/// nothing is.
pub fn base_url_warnings(url: &str) -> Vec<String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Vec::new();
    };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or(v6, |(h, _)| h),
        None => host_port.rsplit_once(':').map_or(host_port, |(h, _)| h),
    }
    .trim_end_matches('.')
    .to_ascii_lowercase();
    let ip: Option<std::net::IpAddr> = host.parse().ok();
    let loopback =
        host == "localhost" || host.ends_with(".localhost") || ip.is_some_and(|a| a.is_loopback());
    let metadata = matches!(
        host.as_str(),
        "metadata" | "metadata.google.internal" | "instance-data" | "100.100.100.200"
    ) || match ip {
        Some(std::net::IpAddr::V4(a)) => a.is_link_local(),
        Some(std::net::IpAddr::V6(a)) => {
            (a.segments()[0] & 0xffc0) == 0xfe80
                || a == "fd00:ec2::254"
                    .parse::<std::net::Ipv6Addr>()
                    .expect("an address")
        }
        None => false,
    };
    let mut out = Vec::new();
    if metadata {
        out.push(format!(
            "the base URL's host {host} is a link-local or cloud metadata address, not a model provider: the API key would be sent to it"
        ));
    }
    if scheme.eq_ignore_ascii_case("http") && !loopback {
        out.push(format!(
            "the base URL is plain http:// to {host}, which is not this machine: the API key would cross the network unencrypted (use https://)"
        ));
    }
    out
}

/// A portable environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_env_name(s: &str) -> bool {
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
    fn risky_base_urls_are_named() {
        for ok in [
            "https://api.deepseek.com",
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434",
            "http://[::1]:9000",
            "https://10.0.0.5",
        ] {
            assert!(base_url_warnings(ok).is_empty(), "{ok}");
        }
        for meta in [
            "http://169.254.169.254/latest",
            "https://169.254.1.1",
            "https://[fe80::1]:443",
            "http://metadata.google.internal/computeMetadata",
            "https://[fd00:ec2::254]",
        ] {
            assert!(
                base_url_warnings(meta)
                    .iter()
                    .any(|w| w.contains("metadata")),
                "{meta}"
            );
        }
        assert!(base_url_warnings("http://api.example.com")[0].contains("unencrypted"));
        assert!(base_url_warnings("http://user:pw@10.1.2.3:80")[0].contains("10.1.2.3"));
    }

    #[test]
    fn base_urls_are_checked() {
        for ok in [
            "https://api.deepseek.com",
            "http://127.0.0.1:8080/v1",
            "http://u:p@h:1/",
            "http://[::1]:9",
        ] {
            assert_eq!(check_base_url(ok), Ok(()), "{ok}");
        }
        for bad in [
            "api.deepseek.com",
            "ftp://h",
            "https://",
            "http://h:port",
            "http://h:99999",
            "http://h x",
            "http://[::1",
        ] {
            assert!(check_base_url(bad).is_err(), "{bad}");
        }
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
