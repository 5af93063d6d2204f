//! Builds the application from settings: store, policy, authenticator, HTTP server and the
//! background roles (conductor heartbeat, notification relay).

use std::net::TcpListener;
use std::sync::Arc;

use actix_cors::Cors;
use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};
use anyhow::Context;

use crate::api;
use crate::auth::policy::Enforcer;
use crate::auth::token::TokenVerifier;
use crate::auth::Authenticator;
use crate::config::{split_list, AuthStrategy, Settings};
use crate::domain::template::TemplateRules;
use crate::drivers::DriverRegistry;
use crate::store::{self, Store};

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
}

impl AppState {
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
            .map_err(|e| anyhow::anyhow!(e))?;
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
            settings: Arc::new(settings),
            store,
            enforcer: Arc::new(enforcer),
            authenticator: Arc::new(authenticator),
            drivers,
            template_rules,
        })
    }
}

/// Opens the configured store, migrating it when `[database] auto_migrate` is on.
pub async fn open_store(settings: &Settings) -> anyhow::Result<Arc<dyn Store>> {
    let url = settings.database.connection.expose();
    let store = store::connect(url, settings.database.max_pool_size)
        .await
        .context("[database] connection: cannot open the database")?;
    if settings.database.auto_migrate {
        store
            .migrate()
            .await
            .context("applying database migrations")?;
    }
    Ok(store)
}

/// The HTTP API, bound and ready to run.
pub struct Application {
    port: u16,
    server: Server,
}

impl Application {
    /// Binds `[api] host:port` (port 0 picks a free one, as tests do).
    pub fn build(state: AppState) -> anyhow::Result<Application> {
        let address = format!("{}:{}", state.settings.api.host, state.settings.api.port);
        let listener = TcpListener::bind(&address)
            .with_context(|| format!("[api] cannot listen on {address}"))?;
        let port = listener.local_addr()?.port();
        let workers = match state.settings.api.workers {
            0 => std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            n => n,
        };
        let cors = state.settings.cors.clone();
        let state = web::Data::new(state);
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .app_data(web::PayloadConfig::new(1024 * 1024))
                .configure(api::routes)
                .wrap(cors_middleware(&cors))
                .wrap(from_fn(crate::auth::keystone::challenge_middleware))
                .wrap(from_fn(api::request_middleware))
        })
        .workers(workers)
        .listen(listener)?
        .run();
        Ok(Application { port, server })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}

fn cors_middleware(s: &crate::config::CorsSection) -> Cors {
    let origins = s.origins();
    if origins.is_empty() {
        return Cors::default();
    }
    let mut cors = Cors::default()
        .allowed_methods(
            split_list(&s.allow_methods)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .allowed_headers(
            split_list(&s.allow_headers)
                .iter()
                .filter_map(|h| h.parse::<actix_web::http::header::HeaderName>().ok())
                .collect::<Vec<_>>(),
        )
        .expose_headers(
            split_list(&s.expose_headers)
                .iter()
                .filter_map(|h| h.parse::<actix_web::http::header::HeaderName>().ok())
                .collect::<Vec<_>>(),
        )
        .max_age(s.max_age);
    if origins.iter().any(|o| o == "*") {
        cors = cors.allow_any_origin().send_wildcard();
    } else {
        for o in &origins {
            cors = cors.allowed_origin(o);
        }
        if s.allow_credentials {
            cors = cors.supports_credentials();
        }
    }
    cors
}

/// Which roles a process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roles {
    pub api: bool,
    pub conductor: bool,
}

/// Runs the chosen roles until the process is stopped.
pub async fn run(settings: Settings, roles: Roles) -> anyhow::Result<()> {
    let store = open_store(&settings).await?;
    let state = AppState::new(settings.clone(), store.clone())?;
    let mut background = Vec::new();
    if roles.conductor {
        let conductor = Arc::new(
            crate::conductor::Conductor::new(
                store.clone(),
                state.drivers.clone(),
                &settings.default.host,
                settings.conductor.clone(),
            )
            .with_certificates(state.certificates.clone()),
        );
        background.push(tokio::spawn(conductor.run()));
        let relay = crate::notify::relay::RelaySettings::from_settings(&settings)?;
        background.push(tokio::spawn(crate::notify::relay::relay_loop(
            store.clone(),
            relay,
        )));
    }
    let result = if roles.api {
        let app = Application::build(state)?;
        tracing::info!(
            address = %format!("http://{}:{}", settings.api.host, app.port()),
            database = if settings.database.connection.expose().starts_with("sqlite") { "sqlite" } else { "postgresql" },
            auth_strategy = ?settings.default.auth_strategy,
            "fleetyard API listening"
        );
        app.run_until_stopped().await.map_err(anyhow::Error::from)
    } else {
        tracing::info!("fleetyard conductor running");
        tokio::signal::ctrl_c().await.map_err(anyhow::Error::from)
    };
    for task in background {
        task.abort();
    }
    result
}
