//! The state every handler shares: settings, store, policy, authenticator, drivers and
//! certificates. `startup.rs` builds the parts from the settings; this only holds them.

use std::sync::Arc;

use crate::auth::front_proxy::FrontProxy;
use crate::auth::policy::Enforcer;
use crate::auth::Authenticator;
use crate::config::Settings;
use crate::domain::template::TemplateRules;
use crate::drivers::DriverRegistry;
use crate::store::Store;

/// Everything a handler needs, shared across workers.
pub struct AppState {
    pub settings: Arc<Settings>,
    pub store: Arc<dyn Store>,
    pub enforcer: Arc<Enforcer>,
    pub authenticator: Arc<Authenticator>,
    /// The front proxy of an aggregated deployment (`[front_proxy]`), when one is configured.
    pub front_proxy: Option<Arc<FrontProxy>>,
    pub drivers: DriverRegistry,
    pub template_rules: TemplateRules,
    /// The `[certificates]` key and policy (shared with the in-process conductor).
    pub certificates: crate::certificates::Certificates,
    /// How the links of answers start (`[api] public_endpoint`, proxy headers, or the request).
    pub links: crate::api::http::links::LinkBase,
    /// The cluster registry's change feed, started by the first watch.
    pub registry_feed: super::kube::feed::RegistryFeed,
    /// Raised when the process is stopping: `/healthcheck` answers 503 `DRAINING`.
    pub draining: Arc<std::sync::atomic::AtomicBool>,
}

impl AppState {
    /// A job for the conductor with the service's defaults (`[conductor] max_attempts`): every
    /// handler makes its jobs here.
    pub fn job(
        &self,
        payload: crate::domain::job::JobPayload,
        resource: impl Into<crate::domain::job::JobResource>,
        driver: impl Into<String>,
    ) -> crate::domain::job::NewJob {
        let mut job = crate::domain::job::NewJob::new(payload, resource, driver);
        job.max_attempts = self.settings.conductor.max_attempts;
        job
    }

    /// The most nodes one node group may have (`[cluster] max_node_count`).
    pub fn node_limit(&self) -> i32 {
        self.settings.cluster.max_node_count
    }

    /// The state around a store, from the parts start-up built ([`crate::startup::api_state`]).
    pub fn new(settings: Settings, store: Arc<dyn Store>, parts: StateParts) -> AppState {
        AppState {
            certificates: parts.certificates,
            links: crate::api::http::links::LinkBase::from_settings(&settings),
            settings: Arc::new(settings),
            registry_feed: super::kube::feed::RegistryFeed::new(store.clone()),
            store,
            enforcer: Arc::new(parts.enforcer),
            authenticator: Arc::new(parts.authenticator),
            front_proxy: parts.front_proxy.map(Arc::new),
            drivers: parts.drivers,
            template_rules: parts.template_rules,
            draining: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        }
    }
}

/// What start-up builds from the settings for the API: the policy, the authenticator, the
/// template rules, and the drivers and certificates it shares with an in-process conductor.
pub struct StateParts {
    pub enforcer: Enforcer,
    pub authenticator: Authenticator,
    pub front_proxy: Option<FrontProxy>,
    pub template_rules: TemplateRules,
    pub drivers: DriverRegistry,
    pub certificates: crate::certificates::Certificates,
}
