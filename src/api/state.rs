//! The state every handler shares: settings, store, policy, authenticator, drivers and
//! certificates, assembled once at start-up.

use std::sync::Arc;

use crate::auth::policy::Enforcer;
use crate::auth::token::TokenVerifier;
use crate::auth::Authenticator;
use crate::config::{split_list, AuthStrategy, Settings};
use crate::domain::template::TemplateRules;
use crate::drivers::DriverRegistry;
use crate::store::Store;

/// Everything a handler needs, shared across workers.
pub struct AppState {
    pub settings: Arc<Settings>,
    pub store: Arc<dyn Store>,
    pub enforcer: Arc<Enforcer>,
    pub authenticator: Arc<Authenticator>,
    pub drivers: DriverRegistry,
    pub template_rules: TemplateRules,
    /// The `[certificates]` key and policy (shared with the in-process conductor).
    pub certificates: crate::certificates::Certificates,
    /// How the links of answers start (`[api] public_endpoint`, proxy headers, or the request).
    pub links: super::links::LinkBase,
    /// The cluster registry's change feed, started by the first watch.
    pub registry_feed: super::kube::feed::RegistryFeed,
}

impl AppState {
    /// A job for the conductor with the service's defaults (`[conductor] max_attempts`): every
    /// handler makes its jobs here.
    pub fn job(
        &self,
        operation: crate::domain::job::Operation,
        resource: impl Into<crate::domain::job::JobResource>,
        driver: impl Into<String>,
        payload: serde_json::Value,
    ) -> crate::domain::job::NewJob {
        let mut job = crate::domain::job::NewJob::new(operation, resource, driver, payload);
        job.max_attempts = self.settings.conductor.max_attempts;
        job
    }

    /// The most nodes one node group may have (`[cluster] max_node_count`).
    pub fn node_limit(&self) -> i32 {
        self.settings.cluster.max_node_count
    }

    /// Validates the policy, auth and driver settings and assembles the state around a store.
    pub fn new(settings: Settings, store: Arc<dyn Store>) -> anyhow::Result<AppState> {
        let enforcer = match &settings.oslo_policy.policy_file {
            Some(path) => Enforcer::from_file(path)
                .map_err(|e| anyhow::anyhow!("[oslo_policy] policy_file: {e}"))?,
            None => Enforcer::with_defaults(),
        };
        let authenticator = match settings.default.auth_strategy {
            AuthStrategy::Noauth => Authenticator::Noauth(settings.noauth.clone()),
            AuthStrategy::Jwt => Authenticator::Jwt(Box::new(
                TokenVerifier::from_settings(&settings.jwt).map_err(|e| anyhow::anyhow!("{e}"))?,
            )),
            AuthStrategy::Keystone => Authenticator::Keystone(Arc::new(
                crate::auth::keystone::KeystoneAuth::from_settings(&settings.keystone_authtoken)
                    .map_err(|e| anyhow::anyhow!(e))?,
            )),
        };
        let mut drivers = DriverRegistry::build(&settings.drivers, &settings.fake_driver)
            .map_err(|e| anyhow::anyhow!(e))?;
        // The kubernetes driver works once it has a management cluster to talk to.
        if drivers.is_available("kubernetes") && !settings.kubernetes_driver.kubeconfig.is_empty() {
            let kubernetes = crate::drivers::kubernetes::KubernetesDriver::new(
                settings.kubernetes_driver.clone(),
            )
            .map_err(|e| anyhow::anyhow!(e))?
            .with_node_limit(settings.cluster.max_node_count);
            drivers.insert(Arc::new(kubernetes));
        }
        let template_rules = TemplateRules {
            allowed_network_drivers: split_list(
                &settings.cluster_template.kubernetes_allowed_network_drivers,
            ),
            default_network_driver: settings
                .cluster_template
                .kubernetes_default_network_driver
                .clone(),
        };
        let certificates = crate::certificates::Certificates::from_settings(&settings)
            .map_err(|e| anyhow::anyhow!(e))?;
        Ok(AppState {
            certificates,
            links: super::links::LinkBase::from_settings(&settings),
            settings: Arc::new(settings),
            registry_feed: super::kube::feed::RegistryFeed::new(store.clone()),
            store,
            enforcer: Arc::new(enforcer),
            authenticator: Arc::new(authenticator),
            drivers,
            template_rules,
        })
    }
}
