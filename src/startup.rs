//! The composition root: builds the application from settings (store, drivers, certificates,
//! policy, authenticator, HTTP server) and runs the background roles (conductor, notification
//! relay). A conductor-only process builds no API state.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use actix_cors::Cors;
use actix_http::error::DispatchError;
use actix_http::HttpService;
use actix_service::{fn_service, map_config, IntoServiceFactory, ServiceFactoryExt};
use actix_web::dev::AppConfig;
use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{web, App};
use anyhow::Context;
use std::future::ready;

use crate::api::http::wire::ErrorBodies;
use crate::api::{self, AppState, StateParts};
use crate::auth::policy::Enforcer;
use crate::auth::token::TokenVerifier;
use crate::auth::Authenticator;
use crate::certificates::Certificates;
use crate::config::{split_list, AuthStrategy, ConfigError, Settings};
use crate::domain::template::TemplateRules;
use crate::drivers::DriverRegistry;
use crate::store::{self, Store};

/// The allocator's settings. mimalloc (the binary's global allocator) reads its options from
/// the environment once, as the process starts, and has no build-time default for these:
///
/// - `MIMALLOC_PURGE_DELAY=0`: memory freed in whole pages goes back to the system at once,
///   where mimalloc's default keeps it resident for a second in case it is reused. Under the
///   bench's page loads (32 detail pages of 100 clusters in flight) that second was about
///   4 MiB of the API's peak resident set (27.8-28.8 against 23.7-24.9 MiB), for about 4% of
///   the detail pages' rate (means of four 5 s runs: 990 against 1,029 req/s) and none of the
///   list's (1,759 against 1,747).
pub const ALLOCATOR_ENV: &[(&str, &str)] = &[("MIMALLOC_PURGE_DELAY", "0")];

/// Runs the process again, in place and with the same arguments, with [`ALLOCATOR_ENV`]'s
/// settings added to its environment, when any of them is missing; one already set (by an
/// operator) is left as it is. Call it first thing in `main`, before any thread starts. It
/// returns only when nothing was missing or the process could not be run again (a binary
/// replaced on disk since it started): then it says so and the process goes on with
/// mimalloc's defaults.
pub fn apply_allocator_settings() {
    use std::os::unix::process::CommandExt;
    let missing: Vec<(&str, &str)> = ALLOCATOR_ENV
        .iter()
        .copied()
        .filter(|(name, _)| std::env::var_os(name).is_none())
        .collect();
    if missing.is_empty() {
        return;
    }
    // `exec` returns only with the error that kept it from running the process.
    let error = match std::env::current_exe() {
        Ok(exe) => {
            let mut args = std::env::args_os();
            let mut command = std::process::Command::new(exe);
            if let Some(arg0) = args.next() {
                command.arg0(arg0);
            }
            command.args(args).envs(missing).exec()
        }
        Err(e) => e,
    };
    eprintln!("fleetyard: allocator settings not applied ({error}); mimalloc's defaults hold");
}

/// Loads the settings as the `fleetyard` command does, then runs the checks that belong to a
/// subsystem ([`check_settings`]), so that every bad value fails start-up the same way: one line
/// naming the option, before anything starts.
pub fn load_settings(config_file: Option<&Path>) -> Result<Settings, ConfigError> {
    let settings = Settings::load(config_file)?;
    check_settings(&settings)?;
    Ok(settings)
}

/// The subsystems' own checks of their settings: the notification transport URL (with
/// `messagingv2`) and the `[certificates]` options.
pub fn check_settings(settings: &Settings) -> Result<(), ConfigError> {
    crate::notify::relay::RelaySettings::from_settings(settings)
        .map_err(|e| ConfigError::Invalid(e.to_string()))?;
    crate::certificates::validate_settings(&settings.certificates).map_err(ConfigError::Invalid)?;
    Ok(())
}

/// The pool `[database]` asks for: its size and timeouts.
pub fn pool_settings(db: &crate::config::DatabaseSection) -> store::PoolSettings {
    store::PoolSettings {
        max_connections: db.max_pool_size,
        pool_timeout: std::time::Duration::from_secs_f64(db.pool_timeout),
        statement_timeout: std::time::Duration::from_secs_f64(db.statement_timeout),
        on_wait: Some(crate::metrics::pool_wait),
    }
}

/// Opens the configured store, migrating it when `[database] auto_migrate` is on.
pub async fn open_store(settings: &Settings) -> anyhow::Result<Arc<dyn Store>> {
    let url = settings.database.connection.expose();
    let store = store::connect_with(url, &pool_settings(&settings.database))
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

/// What the API and the conductor both work with, built once per process.
#[derive(Clone)]
pub struct Backends {
    /// The configured drivers, with the kubernetes driver when a management cluster is set.
    pub drivers: DriverRegistry,
    /// The `[certificates]` key and policy.
    pub certificates: Certificates,
}

impl Backends {
    /// Validates the driver and certificate settings and builds both.
    pub fn build(settings: &Settings) -> anyhow::Result<Backends> {
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
        let certificates = Certificates::from_settings(settings).map_err(|e| anyhow::anyhow!(e))?;
        Ok(Backends {
            drivers,
            certificates,
        })
    }
}

/// The policy `[oslo_policy] policy_file` names, or the defaults.
pub fn enforcer(settings: &Settings) -> anyhow::Result<Enforcer> {
    match &settings.oslo_policy.policy_file {
        Some(path) => {
            Enforcer::from_file(path).map_err(|e| anyhow::anyhow!("[oslo_policy] policy_file: {e}"))
        }
        None => Ok(Enforcer::with_defaults()),
    }
}

/// The authenticator `[DEFAULT] auth_strategy` picks, with its settings checked.
pub fn authenticator(settings: &Settings) -> anyhow::Result<Authenticator> {
    Ok(match settings.default.auth_strategy {
        AuthStrategy::Noauth => Authenticator::Noauth(settings.noauth.clone()),
        AuthStrategy::Jwt => Authenticator::Jwt(Box::new(
            TokenVerifier::from_settings(&settings.jwt).map_err(|e| anyhow::anyhow!("{e}"))?,
        )),
        AuthStrategy::Keystone => Authenticator::Keystone(Arc::new(
            crate::auth::keystone::KeystoneAuth::from_settings(&settings.keystone_authtoken)
                .map_err(|e| anyhow::anyhow!(e))?,
        )),
    })
}

/// The `[cluster_template]` network driver rules.
pub fn template_rules(settings: &Settings) -> TemplateRules {
    TemplateRules {
        allowed_network_drivers: split_list(
            &settings.cluster_template.kubernetes_allowed_network_drivers,
        ),
        default_network_driver: settings
            .cluster_template
            .kubernetes_default_network_driver
            .clone(),
    }
}

/// The API's state over `store`, sharing `backends` with the process's conductor.
pub fn api_state(
    settings: Settings,
    store: Arc<dyn Store>,
    backends: Backends,
) -> anyhow::Result<AppState> {
    let parts = StateParts {
        enforcer: enforcer(&settings)?,
        authenticator: authenticator(&settings)?,
        front_proxy: crate::auth::front_proxy::FrontProxy::from_settings(&settings.front_proxy)?,
        template_rules: template_rules(&settings),
        drivers: backends.drivers,
        certificates: backends.certificates,
    };
    Ok(AppState::new(settings, store, parts))
}

/// Validates the policy, auth, driver and certificate settings and builds the API's state
/// around a store (what an API-only process, a test or a bench serves).
pub fn build_state(settings: Settings, store: Arc<dyn Store>) -> anyhow::Result<AppState> {
    let backends = Backends::build(&settings)?;
    api_state(settings, store, backends)
}

/// The HTTP API, bound and ready to run.
pub struct Application {
    port: u16,
    scheme: &'static str,
    server: Server,
}

/// How long a client has to send its first byte and finish the TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A TLS connection as the HTTP service gets it: the handshake done, under [`ErrorBodies`].
/// A client speaking plain HTTP is answered 400 (see [`api::http::wire::refuse_plain_http`]); a
/// failed or late handshake closes the connection (logged at debug).
async fn accept_tls(
    acceptor: tokio_rustls::TlsAcceptor,
    io: tokio::net::TcpStream,
) -> Result<
    (
        ErrorBodies<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>,
        Option<SocketAddr>,
    ),
    DispatchError,
> {
    let peer = io.peer_addr().ok();
    let timed_out = || DispatchError::Io(std::io::ErrorKind::TimedOut.into());
    let mut first = [0_u8; 1];
    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, io.peek(&mut first)).await {
        Ok(Ok(1)) if !api::http::wire::is_tls_handshake(first[0]) => {
            api::http::wire::refuse_plain_http(io).await;
            return Err(DispatchError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "plain HTTP on the HTTPS port",
            )));
        }
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(DispatchError::Io(e)),
        Err(_) => return Err(timed_out()),
    }
    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(io)).await {
        Ok(Ok(tls)) => Ok((ErrorBodies::new(tls), peer)),
        Ok(Err(e)) => {
            tracing::debug!(peer = ?peer, error = %e, "TLS handshake failed");
            Err(DispatchError::Io(e))
        }
        Err(_) => Err(timed_out()),
    }
}

/// An accepted HTTPS connection.
type TlsConnection = ErrorBodies<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>;

/// Records in the connection's data whether its client certificate makes it the front proxy
/// of an aggregated deployment (the `X-Remote-*` headers of its requests are believed then).
fn judge_peer(
    front_proxy: Option<&crate::auth::front_proxy::FrontProxy>,
    io: &TlsConnection,
    ext: &mut actix_http::Extensions,
) {
    if let Some(front_proxy) = front_proxy {
        let (_, session) = io.get_ref().get_ref();
        ext.insert(front_proxy.judge(session.peer_certificates()));
    }
}

impl Application {
    /// Binds `[api] host:port` (port 0 picks a free one, as tests do), serving HTTPS when
    /// `[api] enabled_ssl` is on (the certificate files are read now: a bad one fails here).
    pub fn build(state: AppState) -> anyhow::Result<Application> {
        let address = format!("{}:{}", state.settings.api.host, state.settings.api.port);
        let front_proxy = state.front_proxy.clone();
        let tls = crate::tls::server_config(
            &state.settings.api,
            front_proxy.as_deref().map(|f| f.roots()),
        )?;
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
        let grace = state.settings.default.graceful_shutdown_timeout;
        let state = web::Data::new(state);
        let app = move || {
            App::new()
                .app_data(state.clone())
                .app_data(web::PayloadConfig::new(crate::api::MAX_BODY_BYTES))
                .configure(api::routes)
                .wrap(cors_middleware(&cors))
                .wrap(from_fn(api::http::keystone::challenge_middleware))
                .wrap(from_fn(api::request_middleware))
        };
        // HttpServer's defaults.
        macro_rules! http_service {
            ($builder:expr) => {
                $builder
                    .client_disconnect_timeout(Duration::from_secs(1))
                    .h1(map_config(
                        app().into_factory().map_err(|e| e.error_response()),
                        |()| AppConfig::default(),
                    ))
            };
        }
        // actix-web's HttpServer, assembled by hand so that each connection is wrapped in
        // `api::http::wire::ErrorBodies` (over TLS, the TLS stream): the errors actix-http's
        // dispatcher answers itself (a request head past its limits, one that is not HTTP)
        // get Magnum's body too.
        // Signals are the process's ([`run`] stops the roles in order); a stop lets in-flight
        // requests finish within `[DEFAULT] graceful_shutdown_timeout`.
        let builder = actix_server::Server::build()
            .workers(workers)
            .disable_signals()
            .shutdown_timeout(grace);
        let (scheme, server) = match tls {
            None => (
                "http",
                builder
                    .listen("fleetyard-api", listener, move || {
                        fn_service(|io: tokio::net::TcpStream| {
                            let peer = io.peer_addr().ok();
                            ready(Ok::<_, DispatchError>((ErrorBodies::new(io), peer)))
                        })
                        .and_then(http_service!(HttpService::build()))
                    })?
                    .run(),
            ),
            Some(config) => {
                let acceptor = tokio_rustls::TlsAcceptor::from(config);
                (
                    "https",
                    builder
                        .listen("fleetyard-api", listener, move || {
                            let acceptor = acceptor.clone();
                            let front_proxy = front_proxy.clone();
                            fn_service(move |io: tokio::net::TcpStream| {
                                accept_tls(acceptor.clone(), io)
                            })
                            .and_then(http_service!(
                                HttpService::build().on_connect_ext(
                                    move |io: &TlsConnection, ext: &mut actix_http::Extensions| {
                                        judge_peer(front_proxy.as_deref(), io, ext)
                                    }
                                )
                            ))
                        })?
                        .run(),
                )
            }
        };
        Ok(Application {
            port,
            scheme,
            server,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `https` when the API serves TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        self.scheme
    }

    /// The handle that stops the server (gracefully: no new connection, in-flight requests
    /// finish within `[DEFAULT] graceful_shutdown_timeout`).
    pub fn handle(&self) -> actix_server::ServerHandle {
        self.server.handle()
    }

    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}

/// Waits for SIGTERM or SIGINT (Ctrl-C); the signal's name.
pub async fn shutdown_signal() -> std::io::Result<&'static str> {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.map(|()| "SIGINT"),
            _ = term.recv() => Ok("SIGTERM"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.map(|()| "Ctrl-C")
    }
}

/// The start-up warning for bearer tokens on plain HTTP: with `jwt` or `keystone` and no
/// `[api] enabled_ssl`, every token crosses the network readable, and kubectl sends none to an
/// `http://` server at all.
pub fn plaintext_token_warning(settings: &Settings) -> Option<String> {
    let strategy = match settings.default.auth_strategy {
        AuthStrategy::Noauth => return None,
        AuthStrategy::Jwt => "jwt",
        AuthStrategy::Keystone => "keystone",
    };
    if settings.api.enabled_ssl {
        return None;
    }
    Some(format!(
        "[DEFAULT] auth_strategy = {strategy} without [api] enabled_ssl: bearer tokens cross \
         the network in clear text, and kubectl sends none to an http:// server; serve HTTPS \
         ([api] enabled_ssl, ssl_cert_file, ssl_key_file) unless a TLS-terminating proxy is \
         the only way in"
    ))
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

/// Runs the chosen roles until the process is stopped (SIGTERM or Ctrl-C), then stops them
/// in order: `/healthcheck` answers draining, the API accepts no new connection and a
/// conductor claims no new job; in-flight requests and held jobs get
/// `[DEFAULT] graceful_shutdown_timeout` to finish, the leases of unfinished jobs are given
/// back, and the notification relay delivers one last round.
pub async fn run(settings: Settings, roles: Roles) -> anyhow::Result<()> {
    let store = open_store(&settings).await?;
    let backends = Backends::build(&settings)?;
    if roles.conductor {
        if let Err(e) = backends.certificates.conductor_preflight() {
            tracing::error!("{e}");
            anyhow::bail!(e);
        }
    }
    let grace = Duration::from_secs(settings.default.graceful_shutdown_timeout);
    let state = if roles.api {
        Some(api_state(
            settings.clone(),
            store.clone(),
            backends.clone(),
        )?)
    } else {
        None
    };
    let mut background = Vec::new();
    let metrics_address = settings.metrics.listen_address.trim();
    if !metrics_address.is_empty() {
        let metrics = crate::metrics::MetricsServer::bind(metrics_address, store.clone())?;
        tracing::info!(address = %metrics_address, "Prometheus metrics at /metrics");
        background.push(tokio::spawn(async move {
            if let Err(e) = metrics.run_until_stopped().await {
                tracing::error!(error = %e, "the metrics server stopped");
            }
        }));
    }
    let (stop_conductor, conductor_stopped) = tokio::sync::watch::channel(false);
    let (stop_relay, relay_stopped) = tokio::sync::watch::channel(false);
    let mut conductor_task = None;
    let mut relay_task = None;
    if roles.conductor {
        let conductor = Arc::new(
            crate::conductor::Conductor::new(
                store.clone(),
                backends.drivers.clone(),
                &settings.default.host,
                settings.conductor.clone(),
            )
            .with_certificates(backends.certificates.clone())
            .with_health_probe(settings.health_probe.clone()),
        );
        let mut stopped = conductor_stopped;
        conductor_task = Some(tokio::spawn(conductor.run_until(
            async move {
                let _ = stopped.wait_for(|s| *s).await;
            },
            grace,
        )));
        let relay = crate::notify::relay::RelaySettings::from_settings(&settings)?;
        relay_task = Some(tokio::spawn(crate::notify::relay::relay_until(
            store.clone(),
            relay,
            relay_stopped,
        )));
    }
    let result = if let Some(state) = state {
        if let Some(warning) = plaintext_token_warning(&settings) {
            tracing::warn!("{warning}");
        }
        let draining = state.draining.clone();
        let app = Application::build(state)?;
        tracing::info!(
            address = %format!("{}://{}:{}", app.scheme(), settings.api.host, app.port()),
            client_certificates = !settings.api.ssl_client_ca_file.trim().is_empty(),
            database = if settings.database.connection.expose().starts_with("sqlite") { "sqlite" } else { "postgresql" },
            auth_strategy = ?settings.default.auth_strategy,
            "fleetyard API listening"
        );
        let handle = app.handle();
        let mut serving = tokio::spawn(app.run_until_stopped());
        tokio::select! {
            served = &mut serving => served.map_err(anyhow::Error::from).and_then(|r| r.map_err(anyhow::Error::from)),
            signal = shutdown_signal() => {
                let signal = signal?;
                draining.store(true, std::sync::atomic::Ordering::SeqCst);
                tracing::info!(signal, grace_seconds = grace.as_secs(), "stopping: /healthcheck answers draining, no new connection or job is taken");
                stop_conductor.send_replace(true);
                handle.stop(true).await;
                serving.await.map_err(anyhow::Error::from).and_then(|r| r.map_err(anyhow::Error::from))
            }
        }
    } else {
        tracing::info!("fleetyard conductor running");
        let signal = shutdown_signal().await?;
        tracing::info!(
            signal,
            grace_seconds = grace.as_secs(),
            "stopping: no new job is claimed"
        );
        stop_conductor.send_replace(true);
        Ok(())
    };
    stop_conductor.send_replace(true);
    if let Some(task) = conductor_task {
        if let Err(e) = task.await {
            tracing::error!(error = %e, "the conductor did not stop cleanly");
        }
    }
    // The relay's last round carries what the conductor committed while it stopped.
    stop_relay.send_replace(true);
    if let Some(mut task) = relay_task {
        if tokio::time::timeout(grace.max(Duration::from_secs(1)), &mut task)
            .await
            .is_err()
        {
            tracing::warn!("the notification relay's last round did not finish in time; its events wait in the outbox");
            task.abort();
        }
    }
    for task in background {
        task.abort();
    }
    if result.is_ok() {
        tracing::info!("fleetyard stopped");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Loads a configuration file as the `fleetyard` command does.
    fn load_text(text: &str) -> Result<Settings, ConfigError> {
        let dir = std::env::temp_dir().join(format!("fleetyard-conf-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("fleetyard.conf");
        let mut file = std::fs::File::create(&path).expect("create");
        file.write_all(text.as_bytes()).expect("write config");
        load_settings(Some(&path))
    }

    #[test]
    fn token_strategies_without_tls_are_warned_about() {
        let mut s = Settings::default();
        assert_eq!(plaintext_token_warning(&s), None, "noauth has no token");
        s.default.auth_strategy = AuthStrategy::Jwt;
        let warning = plaintext_token_warning(&s).expect("jwt on http");
        assert!(
            warning.starts_with("[DEFAULT] auth_strategy = jwt without [api] enabled_ssl"),
            "{warning}"
        );
        s.default.auth_strategy = AuthStrategy::Keystone;
        assert!(plaintext_token_warning(&s).is_some_and(|w| w.contains("keystone")));
        s.api.enabled_ssl = true;
        assert_eq!(plaintext_token_warning(&s), None);
    }

    #[test]
    fn messagingv2_needs_a_usable_transport_url_and_relay_options_are_checked() {
        let err = load_text(
            "[DEFAULT]\ntransport_url = kafka://h:9092/\n[oslo_messaging_notifications]\ndriver = messagingv2\n",
        )
        .expect_err("must fail");
        assert!(
            err.to_string()
                .contains("[DEFAULT] transport_url: unsupported scheme 'kafka'"),
            "{err}"
        );
        let s = load_text(
            "[DEFAULT]\ntransport_url = rabbit://u:p@mq1:5672,u:p@mq2:5672/vh\n[oslo_messaging_notifications]\ndriver = messagingv2\nrelay_poll_interval = 0.05\nrelay_batch_size = 500\n",
        )
        .expect("valid");
        assert!((s.oslo_messaging_notifications.relay_poll_interval - 0.05).abs() < 1e-9);
        assert_eq!(s.oslo_messaging_notifications.relay_batch_size, 500);
        for (text, option) in [
            ("relay_batch_size = 0", "relay_batch_size"),
            ("relay_poll_interval = 0", "relay_poll_interval"),
            ("relay_claim_timeout = 1", "relay_claim_timeout"),
        ] {
            let err = load_text(&format!("[oslo_messaging_notifications]\n{text}\n"))
                .expect_err("must fail");
            assert!(
                err.to_string()
                    .contains(&format!("[oslo_messaging_notifications] {option}")),
                "{err}"
            );
        }
    }
}
