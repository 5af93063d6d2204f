//! The sections of the configuration file, one type each, with their built-in defaults
//! (the embedded quick start). `etc/fleetyard.conf.sample` documents every option.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize};

use super::{split_list, Secret};

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AuthStrategy {
    Noauth,
    Jwt,
    /// Keystone tokens, validated against `[keystone_authtoken] auth_url`.
    Keystone,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DefaultSection {
    /// Name of this host in notifications (`container-infra.<host>`) and in `mservices`.
    pub host: String,
    /// Message broker, as oslo.messaging writes it: `rabbit://user:pass@host:port/vhost`.
    pub transport_url: Secret,
    /// The AMQP topic exchange notifications are published to (Magnum's is `magnum`).
    pub control_exchange: String,
    pub auth_strategy: AuthStrategy,
    pub log_format: LogFormat,
    /// A tracing `EnvFilter` directive, e.g. `info` or `fleetyard=debug,info`.
    pub log_level: String,
    /// Seconds a stopping process (SIGTERM, Ctrl-C) gives its in-flight requests and jobs
    /// before it gives the jobs' leases back and exits (oslo.service's option name).
    pub graceful_shutdown_timeout: u64,
}

impl Default for DefaultSection {
    fn default() -> Self {
        DefaultSection {
            host: default_host(),
            transport_url: Secret::new("rabbit://guest:guest@127.0.0.1:5672/"),
            control_exchange: "magnum".into(),
            auth_strategy: AuthStrategy::Noauth,
            log_format: LogFormat::Text,
            log_level: "info".into(),
            graceful_shutdown_timeout: 60,
        }
    }
}

pub(super) fn default_host() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSection {
    /// `postgres://user@host/db` (production) or `sqlite://path` (embedded default).
    pub connection: Secret,
    pub max_pool_size: u32,
    /// Run pending migrations when the service starts (`fleetyard db upgrade` does it explicitly).
    pub auto_migrate: bool,
    /// Seconds a request waits for a PostgreSQL connection (an idle one, or a new one: TCP
    /// connect and authentication included) before it is answered 503.
    pub pool_timeout: f64,
    /// Seconds one PostgreSQL statement, a commit included, may take before the request is
    /// answered 503; the server cancels it too, and ends a transaction idle for half as long.
    pub statement_timeout: f64,
}

impl Default for DatabaseSection {
    fn default() -> Self {
        DatabaseSection {
            connection: Secret::new("sqlite://fleetyard.sqlite"),
            max_pool_size: 16,
            auto_migrate: true,
            pool_timeout: 2.0,
            statement_timeout: 5.0,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ApiSection {
    pub host: String,
    pub port: u16,
    /// HTTP worker threads; 0 means one per CPU.
    pub workers: usize,
    /// The largest page a list returns (`limit` is clamped to it).
    pub max_limit: u32,
    /// The URL clients reach the service at, without `/v1` (e.g.
    /// `https://cloud.example/container-infra` behind a reverse proxy). When set, every link
    /// the API writes (version discovery, `self`/`bookmark`, `next`) starts with it. Empty:
    /// links are made from the request.
    pub public_endpoint: String,
    /// Serve HTTPS (Magnum's option name); `ssl_cert_file` and `ssl_key_file` are then
    /// required.
    pub enabled_ssl: bool,
    /// The server's certificate (PEM), followed by its intermediates; re-read when it changes
    /// on disk.
    pub ssl_cert_file: String,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1); re-read with it.
    pub ssl_key_file: String,
    /// CA certificates (PEM): when set, every client must present a certificate that chains
    /// to one of them.
    pub ssl_client_ca_file: String,
}

impl ApiSection {
    /// Why the TLS options do not go together, if they do not: `enabled_ssl` needs a
    /// certificate and a key, and files given without it would leave the API on plain HTTP
    /// while the operator believes it is not.
    pub(super) fn tls_problem(&self) -> Option<String> {
        let files = [
            ("ssl_cert_file", &self.ssl_cert_file),
            ("ssl_key_file", &self.ssl_key_file),
            ("ssl_client_ca_file", &self.ssl_client_ca_file),
        ];
        if self.enabled_ssl {
            files[..2]
                .iter()
                .find(|(_, v)| v.trim().is_empty())
                .map(|(option, _)| format!("{option}: must be set with enabled_ssl = true"))
        } else {
            files
                .iter()
                .find(|(_, v)| !v.trim().is_empty())
                .map(|(option, _)| {
                    format!(
                        "{option}: set, but enabled_ssl is false: the API would serve plain HTTP"
                    )
                })
        }
    }

    /// The scheme the API is served with: `https` with `enabled_ssl`.
    pub fn scheme(&self) -> &'static str {
        if self.enabled_ssl {
            "https"
        } else {
            "http"
        }
    }
}

impl Default for ApiSection {
    fn default() -> Self {
        ApiSection {
            host: "127.0.0.1".into(),
            port: 9511,
            workers: 0,
            max_limit: 1000,
            public_endpoint: String::new(),
            enabled_ssl: false,
            ssl_cert_file: String::new(),
            ssl_key_file: String::new(),
            ssl_client_ca_file: String::new(),
        }
    }
}

/// oslo.middleware's options: how a request that came through a proxy is read.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct OsloMiddlewareSection {
    /// Trust `Forwarded` (RFC 7239) and `X-Forwarded-Proto`, `X-Forwarded-Host` and
    /// `X-Forwarded-Prefix` for the links the API writes. Only for a service reached solely
    /// through a proxy that sets them: any client can send these headers.
    pub enable_proxy_headers_parsing: bool,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NotificationDriver {
    Messagingv2,
    Log,
    Noop,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct NotificationsSection {
    pub driver: NotificationDriver,
    /// Comma-separated AMQP topics; each event goes to `<topic>.<priority>`.
    pub topics: String,
    /// Days to keep sent events in the outbox before pruning.
    pub retention_days: u32,
    /// Events one relay claims and publishes per round.
    pub relay_batch_size: u32,
    /// Seconds between polls of an idle outbox. A relay is woken by the commit of an event
    /// (in its own process; on PostgreSQL in any process, through `LISTEN`/`NOTIFY`), so this
    /// only bounds the delay when a wake-up is lost: the `LISTEN` connection is down, or on
    /// SQLite the event was written by another process (a separate `fleetyard api`).
    pub relay_poll_interval: f64,
    /// Seconds a relay's claim on a batch lasts; a relay that dies mid-batch lets another
    /// relay take its events after this long.
    pub relay_claim_timeout: u64,
    /// Seconds between status lines logging the outbox backlog and its oldest event's age.
    pub relay_status_interval: u64,
}

impl Default for NotificationsSection {
    fn default() -> Self {
        NotificationsSection {
            driver: NotificationDriver::Log,
            topics: "notifications".into(),
            retention_days: 7,
            relay_batch_size: 100,
            relay_poll_interval: 1.0,
            relay_claim_timeout: 30,
            relay_status_interval: 60,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct PolicySection {
    /// YAML (or JSON) file overriding default rules; unset means the built-in defaults.
    pub policy_file: Option<PathBuf>,
}

/// Prometheus metrics, served on an address of their own.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSection {
    /// `host:port` where `GET /metrics` is served, without authentication (bind it where
    /// only Prometheus reaches it); empty serves no metrics. Never served on the API's port.
    pub listen_address: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CorsSection {
    /// Comma-separated origins allowed to call the API from a browser (`*` for any); empty disables CORS.
    pub allowed_origin: String,
    pub allow_credentials: bool,
    pub expose_headers: String,
    pub max_age: usize,
    pub allow_methods: String,
    pub allow_headers: String,
}

impl Default for CorsSection {
    fn default() -> Self {
        CorsSection {
            allowed_origin: String::new(),
            allow_credentials: true,
            expose_headers: "X-Auth-Token,X-Openstack-Request-Id,OpenStack-API-Version,OpenStack-API-Minimum-Version,OpenStack-API-Maximum-Version".into(),
            max_age: 3600,
            allow_methods: "GET,PUT,POST,DELETE,PATCH".into(),
            allow_headers: "X-Auth-Token,X-Identity-Status,X-Roles,X-Service-Catalog,X-User-Id,X-Tenant-Id,X-Project-Id,X-OpenStack-Request-Id,OpenStack-API-Version,Content-Type,Authorization".into(),
        }
    }
}

impl CorsSection {
    pub fn origins(&self) -> Vec<String> {
        split_list(&self.allowed_origin)
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct NoauthSection {
    /// Identity used for requests without `X-User-Id`/`X-Project-Id`/`X-Roles` headers
    /// (the `openstack` CLI cannot send them).
    pub user_id: String,
    pub project_id: String,
    pub roles: String,
}

impl Default for NoauthSection {
    fn default() -> Self {
        NoauthSection {
            user_id: "admin".into(),
            project_id: "admin".into(),
            roles: "admin,member,reader".into(),
        }
    }
}

/// The largest `[cluster] max_node_count` accepted.
pub const MAX_NODE_LIMIT: i32 = 100_000;

/// Limits on what one request may ask of a cluster.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSection {
    /// The most nodes one node group may have: `node_count`, `master_count`,
    /// `min_node_count` and `max_node_count` above it are refused with 400, and no driver
    /// works on a larger group.
    pub max_node_count: i32,
}

impl Default for ClusterSection {
    fn default() -> Self {
        ClusterSection {
            max_node_count: 1000,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterTemplateSection {
    /// Network drivers templates may name (`all` for every supported one).
    pub kubernetes_allowed_network_drivers: String,
    pub kubernetes_default_network_driver: String,
}

impl Default for ClusterTemplateSection {
    fn default() -> Self {
        ClusterTemplateSection {
            kubernetes_allowed_network_drivers: "flannel,calico".into(),
            kubernetes_default_network_driver: "flannel".into(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ConductorSection {
    /// Seconds between a conductor's heartbeats into the services table.
    pub heartbeat_interval: u64,
    /// A service whose last heartbeat is older than this many seconds is reported `down`.
    pub service_down_time: u64,
    /// Seconds a claimed job is leased for; renewed while the driver works. A conductor that
    /// dies loses its lease after this long and another one takes the job.
    pub lease_seconds: u64,
    /// Seconds between polls of clusters and federations whose work converges later (Magnum
    /// polls every 10).
    pub sync_interval: u64,
    /// Seconds between health polls of clusters; 0 disables them.
    pub health_interval: u64,
    /// Attempts at a job before it fails for good; 0: no limit but the operation's deadline.
    pub max_attempts: i32,
    /// Seconds an operation without a deadline of its own may stay refused transiently, from
    /// its first refusal (a cluster create has its `create_timeout`); see `conductor.rs`.
    pub operation_timeout: f64,
    /// Seconds before the next attempt of a job refused transiently, doubled after each
    /// further refusal up to `retry_max_delay`.
    pub retry_delay: f64,
    pub retry_max_delay: f64,
    /// Minutes a cluster delete may take from its request: a delete job failing transiently
    /// gives up then (or after `max_attempts`, whichever comes first), and a teardown the
    /// driver started and that has not finished by then fails `DELETE_FAILED` naming what the
    /// backend still holds. 0: no bound.
    pub delete_timeout: u32,
    /// Jobs one conductor process works on at once.
    pub workers: usize,
}

impl Default for ConductorSection {
    fn default() -> Self {
        ConductorSection {
            heartbeat_interval: 10,
            service_down_time: 60,
            lease_seconds: 30,
            sync_interval: 10,
            health_interval: 60,
            max_attempts: 0,
            operation_timeout: 3600.0,
            retry_delay: 1.0,
            retry_max_delay: 60.0,
            delete_timeout: 60,
            workers: 4,
        }
    }
}

/// The conductor's active health prober: it probes each cluster's API (`/readyz`, else
/// `/healthz`) over HTTPS, trusting the cluster's CA only, and moves `health_status` after
/// `failure_threshold` consecutive failures or `success_threshold` consecutive successes. A
/// cluster that goes down is `UNHEALTHY` within `interval * failure_threshold + timeout`
/// seconds (plus the length of a round); one that comes back is `HEALTHY` within
/// `interval * success_threshold + timeout`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct HealthProbeSection {
    /// Whether conductors probe cluster API endpoints.
    pub enabled: bool,
    /// Seconds between probes of one cluster.
    pub interval: u64,
    /// Seconds one probe may take, connection and TLS handshake included (a fraction is
    /// allowed).
    pub timeout: f64,
    /// Probes one conductor runs at once. A round over N clusters of which U never answer
    /// takes at least U * timeout / concurrency seconds; keep it under `interval`, but no
    /// higher than the cores can handshake within `timeout`, or reachable clusters fail.
    pub concurrency: usize,
    /// Consecutive failed probes that make a cluster `UNHEALTHY`.
    pub failure_threshold: u32,
    /// Consecutive successful probes that make a cluster `HEALTHY`.
    pub success_threshold: u32,
    /// Comma-separated template drivers whose clusters are probed (the fake driver's clusters
    /// have simulated addresses and report health through the driver).
    pub drivers: String,
    /// Comma-separated networks (CIDR) the prober may connect to; see
    /// [`crate::domain::health_probe::AddressPolicy`] for how they combine with
    /// `denied_networks`.
    pub allowed_networks: String,
    /// Comma-separated networks (CIDR) the prober never connects to unless a more specific
    /// allowed network holds the address. Default: loopback, link-local, metadata addresses.
    pub denied_networks: String,
}

impl Default for HealthProbeSection {
    fn default() -> Self {
        HealthProbeSection {
            enabled: true,
            interval: 30,
            timeout: 5.0,
            concurrency: 256,
            failure_threshold: 3,
            success_threshold: 1,
            drivers: "external,kubernetes".into(),
            allowed_networks: crate::domain::health_probe::DEFAULT_ALLOWED_NETWORKS.into(),
            denied_networks: crate::domain::health_probe::DEFAULT_DENIED_NETWORKS.into(),
        }
    }
}

impl HealthProbeSection {
    pub fn interval(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.interval.max(1))
    }

    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::try_from_secs_f64(self.timeout)
            .unwrap_or(std::time::Duration::from_secs(5))
    }

    pub fn driver_list(&self) -> Vec<String> {
        split_list(&self.drivers)
    }

    /// The addresses the prober may connect to, from `allowed_networks` and
    /// `denied_networks` (checked at start-up by `validate`).
    pub fn address_policy(&self) -> Result<crate::domain::health_probe::AddressPolicy, String> {
        crate::domain::health_probe::AddressPolicy::parse(
            &self.allowed_networks,
            &self.denied_networks,
        )
    }

    /// How late a cluster that stops answering is seen `UNHEALTHY` at most, the length of a
    /// round aside: `interval * failure_threshold + timeout`.
    pub fn detection_bound(&self) -> std::time::Duration {
        self.interval() * self.failure_threshold.max(1) + self.timeout()
    }

    /// How late a cluster that answers again is seen `HEALTHY` at most, the length of a
    /// round aside: `interval * success_threshold + timeout`.
    pub fn recovery_bound(&self) -> std::time::Duration {
        self.interval() * self.success_threshold.max(1) + self.timeout()
    }

    pub(super) fn validate(&self) -> Result<(), String> {
        if self.interval == 0 {
            return Err("interval: must be at least 1 second".into());
        }
        if !(self.timeout.is_finite()
            && self.timeout >= 0.01
            && self.timeout <= self.interval as f64)
        {
            return Err("timeout: must be a number of seconds from 0.01 to interval".into());
        }
        if self.concurrency == 0 {
            return Err("concurrency: must be at least 1".into());
        }
        if self.failure_threshold == 0 || self.success_threshold == 0 {
            return Err("failure_threshold and success_threshold: must be at least 1".into());
        }
        self.address_policy()?;
        Ok(())
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct QuotasSection {
    /// Clusters a project may have when it has no quota of its own.
    pub max_clusters_per_project: i64,
}

impl Default for QuotasSection {
    fn default() -> Self {
        QuotasSection {
            max_clusters_per_project: 20,
        }
    }
}

/// Per-cluster CAs, CSR signing and the key that encrypts private keys at rest.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CertificatesSection {
    /// File holding the AES-256 key (32 random bytes, base64) that encrypts private keys at
    /// rest. Empty: with an SQLite database, `certificates.key` beside it (generated on first
    /// start); with PostgreSQL, certificates are unavailable until it is set.
    pub key_file: String,
    /// Days a cluster CA (and the service's own client certificate) is valid.
    pub ca_validity_days: u32,
    /// The most days a certificate signed from a CSR is valid (never past its CA).
    pub max_validity_days: u32,
    /// Key types a CSR may carry: rsa, ecdsa-p256, ecdsa-p384, ed25519.
    pub allowed_key_types: String,
    /// Smallest RSA key, in bits (2048 to 8192).
    pub min_rsa_key_bits: u32,
    /// Groups (O=) whose certificates need `certificate:create_privileged`.
    pub privileged_groups: String,
    /// Common-name prefixes (users) whose certificates need `certificate:create_privileged`.
    pub privileged_user_prefixes: String,
}

impl Default for CertificatesSection {
    fn default() -> Self {
        CertificatesSection {
            key_file: String::new(),
            ca_validity_days: 3650,
            max_validity_days: 365,
            allowed_key_types: "rsa,ecdsa-p256,ecdsa-p384,ed25519".into(),
            min_rsa_key_bits: 2048,
            privileged_groups: "system:masters,kubeadm:cluster-admins,system:nodes".into(),
            privileged_user_prefixes: "system:".into(),
        }
    }
}

/// The `[jwt]` section of fleetyard.conf.
///
/// Deserialized by the `config` crate from an INI file, so every value may arrive as a string;
/// every field has a default and `leeway` accepts either a number or a numeric string.
/// Empty strings for `key_file`, `jwks_file`, `issuer` and `audience` mean "not set".
/// Unknown keys are refused, like the other sections of fleetyard.conf, so typos surface.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct JwtSettings {
    /// Comma-separated list of accepted algorithms, pinned: tokens whose header `alg` is not listed
    /// are refused. Supported: HS256, HS384, HS512, RS256, RS384, RS512, PS256, ES256, ES384.
    /// Default "RS256".
    pub algorithms: String,
    /// PEM public key (RSA or EC) for RS*/PS*/ES*, or a file holding the shared secret for HS*
    /// (trailing newline trimmed).
    pub key_file: Option<PathBuf>,
    /// A JWKS document (JSON {"keys": [...]}) on disk; keys chosen by the token's `kid`, or the
    /// only key if just one.
    pub jwks_file: Option<PathBuf>,
    /// If set, `iss` must equal it.
    pub issuer: Option<String>,
    /// If set, `aud` (string or array) must contain it.
    pub audience: Option<String>,
    /// Claim holding the user id (required, string). Default "sub".
    pub user_id_claim: String,
    /// Claim holding the project id (optional, string). Default "project_id".
    pub project_id_claim: String,
    /// Claim holding the roles: a JSON array of strings or a comma-separated string.
    /// Default "roles".
    pub roles_claim: String,
    /// Claim holding the domain id (optional, string). Default "domain_id".
    pub domain_id_claim: String,
    /// Seconds of clock skew allowed for `exp`/`nbf`. Default 30, at most one day.
    #[serde(deserialize_with = "deserialize_seconds")]
    pub leeway: u64,
}

impl Default for JwtSettings {
    fn default() -> Self {
        JwtSettings {
            algorithms: "RS256".to_string(),
            key_file: None,
            jwks_file: None,
            issuer: None,
            audience: None,
            user_id_claim: "sub".to_string(),
            project_id_claim: "project_id".to_string(),
            roles_claim: "roles".to_string(),
            domain_id_claim: "domain_id".to_string(),
            leeway: 30,
        }
    }
}

/// Keystone token validation (`auth_strategy = keystone`), in keystonemiddleware's shape.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct KeystoneAuthtokenSection {
    /// Sent to clients in `WWW-Authenticate: Keystone uri="..."` on 401 (the public Keystone
    /// URL). Empty: `auth_url`.
    pub www_authenticate_uri: String,
    /// Keystone's identity endpoint the service validates tokens with, e.g.
    /// `http://keystone:5000` or `http://keystone:5000/v3`.
    pub auth_url: String,
    /// How the service authenticates itself: `password` or `v3applicationcredential`.
    pub auth_type: String,
    pub username: String,
    pub password: Secret,
    pub user_domain_name: String,
    pub project_name: String,
    pub project_domain_name: String,
    pub application_credential_id: String,
    pub application_credential_secret: Secret,
    /// Roles a service token (`X-Service-Token`) must hold; accepted for compatibility with
    /// keystonemiddleware's configuration.
    pub service_token_roles: String,
    /// Seconds a validated token is trusted without asking Keystone again (never past the
    /// token's own expiry). 0 disables the cache.
    pub token_cache_time: u64,
    /// Seconds a token Keystone refused is refused from the cache.
    pub invalid_token_cache_time: u64,
    /// The most tokens (valid and invalid) kept in the cache.
    pub token_cache_size: usize,
    /// Seconds to wait for Keystone (connect and answer) before answering 503.
    pub http_connect_timeout: u64,
}

impl Default for KeystoneAuthtokenSection {
    fn default() -> Self {
        KeystoneAuthtokenSection {
            www_authenticate_uri: String::new(),
            auth_url: String::new(),
            auth_type: "password".into(),
            username: String::new(),
            password: Secret::default(),
            user_domain_name: "Default".into(),
            project_name: String::new(),
            project_domain_name: "Default".into(),
            application_credential_id: String::new(),
            application_credential_secret: Secret::default(),
            service_token_roles: "service".into(),
            token_cache_time: 300,
            invalid_token_cache_time: 10,
            token_cache_size: 10_000,
            http_connect_timeout: 5,
        }
    }
}

/// Accepts a non-negative integer given either as a number or as a string (INI values).
pub(super) fn deserialize_seconds<'de, D>(deserializer: D) -> Result<u64, D::Error>
where
    D: Deserializer<'de>,
{
    struct SecondsVisitor;

    impl serde::de::Visitor<'_> for SecondsVisitor {
        type Value = u64;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a non-negative whole number of seconds")
        }

        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }

        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
        }

        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<u64, E> {
            v.trim()
                .parse::<u64>()
                .map_err(|_| E::invalid_value(serde::de::Unexpected::Str(v), &self))
        }
    }

    deserializer.deserialize_any(SecondsVisitor)
}
