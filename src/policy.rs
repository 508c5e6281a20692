//! The pressure policy of `@deepseek-ai/dsh-compaction-basic` rc.8
//! (compaction §2.1–§2.4): defaults, per-route resolution, budgets and the
//! capacity source.
//!
//! * [`PolicyConfig`] is the validated `[compaction]` section (see
//!   [`crate::config`] for loading and the reference's validation messages).
//! * [`PolicyConfig::resolve`] merges the exact `(provider, model)` override
//!   over the top level, field by field, with the retention rule of §2.2.
//! * [`Policy::budgets`] scales a policy by a context window in IEEE double
//!   arithmetic (`floor(cw × ratio)`, as JavaScript computes it).
//! * `resolve_capacity` picks the context window: flag, config model entry,
//!   logged `request/context`, config route default, built-in adapter table.
//!
//! ```
//! use dsh::policy::PolicyConfig;
//! // DSH's defaults: compact at 0.8 of the window, keep 0.16 of it.
//! let policy = PolicyConfig::default().resolve("deepseek", "deepseek-chat");
//! let budgets = policy.budgets(128_000.0).unwrap();
//! assert_eq!(budgets.threshold_tokens, 102_400);
//! assert_eq!(budgets.retain_tokens, 20_480);
//! ```

/// Default `thresholdRatio`.
pub(crate) const DEFAULT_THRESHOLD_RATIO: f64 = 0.8;
/// Default `retainRatio`.
pub(crate) const DEFAULT_RETAIN_RATIO: f64 = 0.16;
/// Default summary `maxTokens`.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 8192;
/// Default `compactionRetries`.
pub(crate) const DEFAULT_COMPACTION_RETRIES: u64 = 1;
/// Default `maxOverflowRetries`.
pub(crate) const DEFAULT_MAX_OVERFLOW_RETRIES: u64 = 1;
/// The DeepSeek adapter's `defaultContextWindow` (and its catalog's value).
pub(crate) const DEEPSEEK_DEFAULT_CONTEXT_WINDOW: u64 = 1_000_000;
/// The provider name of the built-in DeepSeek route.
pub(crate) const DEEPSEEK_PROVIDER: &str = "deepseek-official";

/// How much of the tail compaction keeps verbatim.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Retention {
    /// `retainRatio`: `floor(cw × ratio)`.
    Ratio(f64),
    /// `retainTokens`: an absolute budget.
    Tokens(u64),
}

/// A `[[compaction.modelPolicies]]` entry: every field optional but the target.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelPolicy {
    /// Exact provider.
    pub provider: String,
    /// Exact model.
    pub model: String,
    /// `thresholdRatio`.
    pub threshold_ratio: Option<f64>,
    /// `retainRatio`.
    pub retain_ratio: Option<f64>,
    /// `retainTokens`.
    pub retain_tokens: Option<u64>,
    /// `summarizationProvider`.
    pub summarization_provider: Option<String>,
    /// `summarizationModel`.
    pub summarization_model: Option<String>,
    /// `maxTokens`.
    pub max_tokens: Option<u64>,
    /// `compactionRetries`.
    pub compaction_retries: Option<u64>,
    /// `maxOverflowRetries`.
    pub max_overflow_retries: Option<u64>,
}

impl ModelPolicy {
    /// `resolveRetention(override, fallback)`.
    fn retention_or(&self, fallback: Retention) -> Retention {
        if let Some(t) = self.retain_tokens {
            Retention::Tokens(t)
        } else if let Some(r) = self.retain_ratio {
            Retention::Ratio(r)
        } else {
            fallback
        }
    }
}

/// The validated `[compaction]` configuration (`resolveConfig`).
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyConfig {
    /// `thresholdRatio`.
    pub threshold_ratio: f64,
    /// Top-level retention (default `retainRatio` 0.16).
    pub retention: Retention,
    /// `summarizationProvider` (`""`: the routed target).
    pub summarization_provider: String,
    /// `summarizationModel`.
    pub summarization_model: String,
    /// `maxTokens` of the summary call.
    pub max_tokens: u64,
    /// `compactionRetries`.
    pub compaction_retries: u64,
    /// `maxOverflowRetries`.
    pub max_overflow_retries: u64,
    /// Exact-target overrides.
    pub model_policies: Vec<ModelPolicy>,
    /// `auto`.
    pub auto: bool,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            threshold_ratio: DEFAULT_THRESHOLD_RATIO,
            retention: Retention::Ratio(DEFAULT_RETAIN_RATIO),
            summarization_provider: String::new(),
            summarization_model: String::new(),
            max_tokens: DEFAULT_MAX_TOKENS,
            compaction_retries: DEFAULT_COMPACTION_RETRIES,
            max_overflow_retries: DEFAULT_MAX_OVERFLOW_RETRIES,
            model_policies: Vec::new(),
            auto: true,
        }
    }
}

/// The policy for one routed target (`resolveTargetPolicy`).
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Routed provider.
    pub provider: String,
    /// Routed model.
    pub model: String,
    /// Whether a model policy matched.
    pub overridden: bool,
    /// `thresholdRatio`.
    pub threshold_ratio: f64,
    /// Retention.
    pub retention: Retention,
    /// `summarizationProvider`.
    pub summarization_provider: String,
    /// `summarizationModel`.
    pub summarization_model: String,
    /// `maxTokens`.
    pub max_tokens: u64,
    /// `compactionRetries`.
    pub compaction_retries: u64,
    /// `maxOverflowRetries`.
    pub max_overflow_retries: u64,
}

/// A budget could not be computed (`TargetPressureConfigError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PolicyError {
    /// `provider/model`.
    pub target_key: String,
    /// The reference's message.
    pub message: String,
}

/// Concrete token budgets for one capacity (`resolveCompactSpec`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budgets {
    /// The capacity.
    pub context_window: u64,
    /// `thresholdRatio`.
    pub threshold_ratio: f64,
    /// `floor(cw × thresholdRatio)`.
    pub threshold_tokens: u64,
    /// `retainTokens ?? floor(cw × retainRatio)`.
    pub retain_tokens: u64,
}

impl Budgets {
    /// The pressure path compacts when `totalTokens ≥ thresholdTokens`.
    pub fn over_threshold(&self, total_tokens: f64) -> bool {
        total_tokens >= self.threshold_tokens as f64
    }

    /// `thresholdTokens − totalTokens` (negative when over).
    pub fn headroom(&self, total_tokens: f64) -> f64 {
        self.threshold_tokens as f64 - total_tokens
    }
}

/// `Math.floor(a * b)` on doubles, for a finite non-negative product.
fn floor_mul(a: f64, b: f64) -> u64 {
    (a * b).floor() as u64
}

impl PolicyConfig {
    /// Merge the exact `(provider, model)` override over the top level.
    pub fn resolve(&self, provider: &str, model: &str) -> Policy {
        let o = self
            .model_policies
            .iter()
            .find(|p| p.provider == provider && p.model == model);
        let empty = ModelPolicy::default();
        let ov = o.unwrap_or(&empty);
        Policy {
            provider: provider.to_string(),
            model: model.to_string(),
            overridden: o.is_some(),
            threshold_ratio: ov.threshold_ratio.unwrap_or(self.threshold_ratio),
            retention: ov.retention_or(self.retention),
            summarization_provider: ov
                .summarization_provider
                .clone()
                .unwrap_or_else(|| self.summarization_provider.clone()),
            summarization_model: ov
                .summarization_model
                .clone()
                .unwrap_or_else(|| self.summarization_model.clone()),
            max_tokens: ov.max_tokens.unwrap_or(self.max_tokens),
            compaction_retries: ov.compaction_retries.unwrap_or(self.compaction_retries),
            max_overflow_retries: ov.max_overflow_retries.unwrap_or(self.max_overflow_retries),
        }
    }
}

impl Policy {
    /// `provider/model`.
    pub fn target_key(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }

    /// Scale by a capacity (a JavaScript number: it must be a positive integer).
    pub fn budgets(&self, context_window: f64) -> Result<Budgets, PolicyError> {
        let err = |message: String| PolicyError {
            target_key: self.target_key(),
            message,
        };
        if !(context_window.is_finite() && context_window.fract() == 0.0 && context_window > 0.0) {
            let mut s = String::new();
            if context_window.is_nan() {
                s.push_str("NaN");
            } else if context_window.is_infinite() {
                s.push_str(if context_window > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                });
            } else {
                crate::json::js_number(context_window, &mut s);
            }
            return Err(err(format!(
                "BasicCompactionConfig: contextWindow ({s}) must be a positive integer"
            )));
        }
        let threshold_tokens = floor_mul(context_window, self.threshold_ratio);
        let retain_tokens = match self.retention {
            Retention::Tokens(t) => t,
            Retention::Ratio(r) => floor_mul(context_window, r),
        };
        if retain_tokens >= threshold_tokens {
            return Err(err(format!(
                "BasicCompactionConfig: {} retainTokens ({retain_tokens}) must be less than threshold tokens {threshold_tokens}",
                self.target_key()
            )));
        }
        Ok(Budgets {
            context_window: context_window as u64,
            threshold_ratio: self.threshold_ratio,
            threshold_tokens,
            retain_tokens,
        })
    }
}

/// Where a context window came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapacitySource {
    /// A command-line override.
    Flag,
    /// The config's `[[routes]]` model entry.
    ConfigModel,
    /// The latest `request/context` for the routed target.
    Logged,
    /// The config route's `defaultContextWindow`.
    ConfigRoute,
    /// The built-in adapter table (`deepseek-official`: 1 000 000).
    BuiltIn,
}

impl CapacitySource {
    /// `flag`, `config-model`, `request/context`, `config-route`, `built-in`.
    pub fn as_str(self) -> &'static str {
        match self {
            CapacitySource::Flag => "flag",
            CapacitySource::ConfigModel => "config-model",
            CapacitySource::Logged => "request/context",
            CapacitySource::ConfigRoute => "config-route",
            CapacitySource::BuiltIn => "built-in",
        }
    }
}

/// A resolved capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Capacity {
    /// Tokens (a JavaScript number, validated by [`Policy::budgets`]).
    pub context_window: f64,
    /// Where it came from.
    pub source: CapacitySource,
}

/// The capacity facts available for one routed target.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CapacityInputs {
    /// `--context-window`.
    pub flag: Option<u64>,
    /// The config route's model entry `contextWindow`.
    pub config_model: Option<u64>,
    /// The latest logged `request/context.contextWindow` for the target.
    pub logged: Option<f64>,
    /// The config route's `defaultContextWindow`.
    pub config_route_default: Option<u64>,
}

/// Pick the capacity (compaction §2.4, recommended offline order, with the
/// flag first and a route's `defaultContextWindow` as the fallback it is in
/// the adapters): flag → config model entry → logged `request/context` →
/// config route default → built-in table → none.
pub(crate) fn resolve_capacity(provider: &str, inputs: &CapacityInputs) -> Option<Capacity> {
    let pick = |v: Option<f64>, source| {
        v.map(|context_window| Capacity {
            context_window,
            source,
        })
    };
    pick(inputs.flag.map(|v| v as f64), CapacitySource::Flag)
        .or_else(|| {
            pick(
                inputs.config_model.map(|v| v as f64),
                CapacitySource::ConfigModel,
            )
        })
        .or_else(|| pick(inputs.logged, CapacitySource::Logged))
        .or_else(|| {
            pick(
                inputs.config_route_default.map(|v| v as f64),
                CapacitySource::ConfigRoute,
            )
        })
        .or_else(|| {
            (provider == DEEPSEEK_PROVIDER).then_some(Capacity {
                context_window: DEEPSEEK_DEFAULT_CONTEXT_WINDOW as f64,
                source: CapacitySource::BuiltIn,
            })
        })
}

/// The reference's message for a target without capacity.
pub fn no_capacity_message(provider: &str, model: &str) -> String {
    format!(
        "compaction-basic: no context capacity for {provider}/{model}; configure contextWindow on that adapter model"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(threshold: f64, retention: Retention) -> Policy {
        let cfg = PolicyConfig {
            threshold_ratio: threshold,
            retention,
            ..PolicyConfig::default()
        };
        cfg.resolve("p", "m")
    }

    #[test]
    fn default_budgets_match_the_spec_table() {
        let p = PolicyConfig::default().resolve(DEEPSEEK_PROVIDER, "deepseek-v4-flash");
        for (cw, t, r) in [
            (1_000_000.0, 800_000, 160_000),
            (128_000.0, 102_400, 20_480),
            (4_000.0, 3_200, 640),
        ] {
            let b = p.budgets(cw).unwrap();
            assert_eq!((b.threshold_tokens, b.retain_tokens), (t, r), "cw {cw}");
        }
    }

    #[test]
    fn double_arithmetic_not_decimal() {
        // 100 × 0.29 = 28.999999999999996 → 28
        let b = policy(0.29, Retention::Tokens(0)).budgets(100.0).unwrap();
        assert_eq!(b.threshold_tokens, 28);
        // 256000 × 0.16 = 40960.00000000001 → 40960
        let b = policy(0.8, Retention::Ratio(0.16))
            .budgets(256_000.0)
            .unwrap();
        assert_eq!((b.threshold_tokens, b.retain_tokens), (204_800, 40_960));
        assert!(b.over_threshold(204_800.0));
        assert!(!b.over_threshold(204_799.0));
        assert_eq!(b.headroom(204_000.0), 800.0);
    }

    #[test]
    fn budget_errors_use_the_reference_messages() {
        let e = policy(0.8, Retention::Tokens(3200))
            .budgets(4000.0)
            .unwrap_err();
        assert_eq!(
            e.message,
            "BasicCompactionConfig: p/m retainTokens (3200) must be less than threshold tokens 3200"
        );
        assert_eq!(e.target_key, "p/m");
        let e = policy(0.8, Retention::Ratio(0.16))
            .budgets(1.5)
            .unwrap_err();
        assert_eq!(
            e.message,
            "BasicCompactionConfig: contextWindow (1.5) must be a positive integer"
        );
        assert!(policy(0.8, Retention::Ratio(0.16)).budgets(0.0).is_err());
    }

    #[test]
    fn per_route_resolution_and_retention_inheritance() {
        let cfg = PolicyConfig {
            retention: Retention::Tokens(20_000),
            model_policies: vec![
                ModelPolicy {
                    provider: "p".into(),
                    model: "ratio".into(),
                    retain_ratio: Some(0.1),
                    ..ModelPolicy::default()
                },
                ModelPolicy {
                    provider: "p".into(),
                    model: "thr".into(),
                    threshold_ratio: Some(0.5),
                    ..ModelPolicy::default()
                },
            ],
            ..PolicyConfig::default()
        };
        // An override's own retainRatio cancels the inherited retainTokens.
        let r = cfg.resolve("p", "ratio");
        assert!(r.overridden);
        assert_eq!(r.retention, Retention::Ratio(0.1));
        assert_eq!(r.threshold_ratio, 0.8);
        // Without its own retention it inherits the top level's.
        let t = cfg.resolve("p", "thr");
        assert_eq!(t.retention, Retention::Tokens(20_000));
        assert_eq!(t.threshold_ratio, 0.5);
        // No match: the top level.
        let n = cfg.resolve("p", "other");
        assert!(!n.overridden);
        assert_eq!(n.retention, Retention::Tokens(20_000));
    }

    #[test]
    fn capacity_order() {
        let mut i = CapacityInputs {
            logged: Some(128_000.0),
            config_route_default: Some(64_000),
            ..CapacityInputs::default()
        };
        let c = resolve_capacity("x", &i).unwrap();
        assert_eq!(
            (c.context_window, c.source),
            (128_000.0, CapacitySource::Logged)
        );
        i.config_model = Some(200_000);
        assert_eq!(
            resolve_capacity("x", &i).unwrap().source,
            CapacitySource::ConfigModel
        );
        i.flag = Some(5);
        assert_eq!(resolve_capacity("x", &i).unwrap().context_window, 5.0);
        let none = CapacityInputs::default();
        assert!(resolve_capacity("x", &none).is_none());
        let b = resolve_capacity(DEEPSEEK_PROVIDER, &none).unwrap();
        assert_eq!((b.context_window, b.source), (1e6, CapacitySource::BuiltIn));
        i = CapacityInputs {
            config_route_default: Some(64_000),
            ..CapacityInputs::default()
        };
        assert_eq!(
            resolve_capacity("x", &i).unwrap().source,
            CapacitySource::ConfigRoute
        );
    }
}
