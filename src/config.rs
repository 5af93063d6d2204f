//! One typed settings tree, loaded once and validated once.
//!
//! Sources, later ones winning: built-in defaults (the embedded quick start), an INI file in
//! OpenStack's shape (`--config-file`, else `etc/fleetyard/fleetyard.conf` when present), then
//! environment variables `FLEETYARD__SECTION__KEY`. An unknown section or option, or a value of
//! the wrong type, fails start-up with one line naming the option.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The file read when no `--config-file` is given, if it exists.
pub const DEFAULT_CONFIG_FILE: &str = "etc/fleetyard/fleetyard.conf";

/// A string that never appears in logs or debug output.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl Serialize for Secret {
    /// Only the option's presence is ever serialised, never its value.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("***")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret)
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    #[serde(rename = "default")]
    pub default: DefaultSection,
    pub database: DatabaseSection,
    pub api: ApiSection,
    pub oslo_middleware: OsloMiddlewareSection,
    pub oslo_messaging_notifications: NotificationsSection,
    pub oslo_policy: PolicySection,
    pub cors: CorsSection,
    pub jwt: JwtSettings,
    pub noauth: NoauthSection,
    pub cluster: ClusterSection,
    pub cluster_template: ClusterTemplateSection,
    pub drivers: DriversSection,
    pub fake_driver: FakeDriverSection,
    pub kubernetes_driver: KubernetesDriverSection,
    pub conductor: ConductorSection,
    pub health_probe: HealthProbeSection,
    pub quotas: QuotasSection,
    pub certificates: CertificatesSection,
    pub keystone_authtoken: KeystoneAuthtokenSection,
    pub metrics: MetricsSection,
}

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
        }
    }
}

fn default_host() -> String {
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
    fn tls_problem(&self) -> Option<String> {
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
pub struct DriversSection {
    /// Driver for templates that name none (`fake` is the simulator used by the quick start).
    pub default_driver: String,
    /// Comma-separated driver names that may not be used.
    pub disabled_drivers: String,
}

impl Default for DriversSection {
    fn default() -> Self {
        DriversSection {
            default_driver: "fake".into(),
            disabled_drivers: String::new(),
        }
    }
}

/// The `fake` driver: a deterministic simulator of provisioning.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FakeDriverSection {
    /// Simulated seconds each operation takes; 0 completes within the job.
    pub create_seconds: u64,
    pub update_seconds: u64,
    pub delete_seconds: u64,
    pub federation_seconds: u64,
    /// Milliseconds every simulated backend call blocks (a slow cloud API).
    pub latency_ms: u64,
}

impl Default for FakeDriverSection {
    fn default() -> Self {
        FakeDriverSection {
            create_seconds: 3,
            update_seconds: 2,
            delete_seconds: 1,
            federation_seconds: 1,
            latency_ms: 0,
        }
    }
}

/// The `kubernetes` driver: Cluster API objects on a management cluster, Karmada for
/// federations. It is registered only when `kubeconfig` is set.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct KubernetesDriverSection {
    /// Path of the kubeconfig of the Cluster API management cluster; empty leaves the driver
    /// unconfigured.
    pub kubeconfig: String,
    /// Context of that kubeconfig to use; empty means its current context.
    pub context: String,
    /// Namespace of the management cluster the Cluster API objects are applied in.
    pub namespace: String,
    /// Kubernetes version of clusters whose template and labels name no `kube_tag`.
    pub default_kube_tag: String,
    /// apiVersion of the infrastructure provider's objects.
    pub infrastructure_api_version: String,
    /// Kind of the infrastructure cluster object (OpenStackCluster for CAPO).
    pub infrastructure_cluster_kind: String,
    /// Kind of the infrastructure machine template (OpenStackMachineTemplate for CAPO).
    pub infrastructure_machine_template_kind: String,
    /// Secret (in `namespace`) holding the clouds.yaml CAPO uses, and the cloud's name in it.
    pub cloud_credentials_secret: String,
    pub cloud_name: String,
    /// Seconds to wait for a Kubernetes API server to connect or answer.
    pub request_timeout: u64,
    /// The federation control plane: only `karmada` exists.
    pub federation_engine: String,
    /// Namespace of the host cluster the Karmada control plane runs in.
    pub karmada_namespace: String,
    /// Service type of the Karmada API server (the operator writes its address from it).
    pub karmada_apiserver_service_type: String,
}

impl Default for KubernetesDriverSection {
    fn default() -> Self {
        KubernetesDriverSection {
            kubeconfig: String::new(),
            context: String::new(),
            namespace: "magnum-system".into(),
            default_kube_tag: "v1.30.1".into(),
            infrastructure_api_version: "infrastructure.cluster.x-k8s.io/v1beta1".into(),
            infrastructure_cluster_kind: "OpenStackCluster".into(),
            infrastructure_machine_template_kind: "OpenStackMachineTemplate".into(),
            cloud_credentials_secret: "openstack-cloud-credentials".into(),
            cloud_name: "openstack".into(),
            request_timeout: 30,
            federation_engine: "karmada".into(),
            karmada_namespace: "karmada-system".into(),
            karmada_apiserver_service_type: "NodePort".into(),
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
    /// Attempts at a job before it fails for good (transient driver errors are retried with
    /// exponential backoff).
    pub max_attempts: i32,
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
            max_attempts: 5,
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

    fn validate(&self) -> Result<(), String> {
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
fn deserialize_seconds<'de, D>(deserializer: D) -> Result<u64, D::Error>
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

/// Why `[api] public_endpoint` cannot be the start of every link, if it cannot.
fn public_endpoint_problem(value: &str) -> Option<&'static str> {
    let v = value.trim().trim_end_matches('/');
    if v.is_empty() {
        return None;
    }
    let Some(rest) = v
        .strip_prefix("https://")
        .or_else(|| v.strip_prefix("http://"))
    else {
        return Some("expected an http:// or https:// URL");
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Some("the URL has no host");
    }
    if rest
        .chars()
        .any(|c| !c.is_ascii_graphic() || matches!(c, '?' | '#' | '"' | '\\'))
    {
        return Some("expected a URL without query, fragment, spaces or quotes");
    }
    if v.ends_with("/v1") {
        return Some("give the service's root URL, without /v1 (links add it)");
    }
    None
}

/// Splits a comma-separated option into trimmed, non-empty items.
pub fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration file {0} does not exist")]
    MissingFile(PathBuf),
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

impl Settings {
    /// Loads defaults, then the file (explicit, or the default path when present), then the
    /// environment.
    pub fn load(config_file: Option<&Path>) -> Result<Settings, ConfigError> {
        let file = match config_file {
            Some(path) if !path.exists() => return Err(ConfigError::MissingFile(path.into())),
            Some(path) => Some(path.to_path_buf()),
            None => Some(PathBuf::from(DEFAULT_CONFIG_FILE)).filter(|p| p.exists()),
        };
        let mut builder = config::Config::builder();
        if let Some(path) = &file {
            builder = builder
                .add_source(config::File::from(path.as_path()).format(config::FileFormat::Ini));
        }
        builder = builder.add_source(
            config::Environment::with_prefix("FLEETYARD")
                .prefix_separator("__")
                .separator("__"),
        );
        let raw = builder
            .build()
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        check_known_options(&raw)?;
        let settings: Settings = raw
            .clone()
            .try_deserialize()
            .map_err(|e| ConfigError::Invalid(describe(e)))?;
        settings.validate()?;
        Ok(settings)
    }

    /// The checks that need no subsystem; `startup::check_settings` runs the subsystems' own
    /// (the transport URL, the `[certificates]` options) right after loading.
    fn validate(&self) -> Result<(), ConfigError> {
        let conn = self.database.connection.expose();
        if !(conn.starts_with("postgres://")
            || conn.starts_with("postgresql://")
            || conn.starts_with("sqlite:"))
        {
            return Err(ConfigError::Invalid(
                "[database] connection: expected a postgres:// or sqlite:// URL".into(),
            ));
        }
        for (option, seconds) in [
            ("pool_timeout", self.database.pool_timeout),
            ("statement_timeout", self.database.statement_timeout),
        ] {
            if !(seconds.is_finite() && (0.01..=3600.0).contains(&seconds)) {
                return Err(ConfigError::Invalid(format!(
                    "[database] {option}: must be a number of seconds from 0.01 to 3600"
                )));
            }
        }
        if !(1..=MAX_NODE_LIMIT).contains(&self.cluster.max_node_count) {
            return Err(ConfigError::Invalid(format!(
                "[cluster] max_node_count: must be between 1 and {MAX_NODE_LIMIT}"
            )));
        }
        let metrics = self.metrics.listen_address.trim();
        if !metrics.is_empty() && metrics.parse::<std::net::SocketAddr>().is_err() {
            return Err(ConfigError::Invalid(format!(
                "[metrics] listen_address: expected an IP address and port such as \
                 127.0.0.1:9464, not '{metrics}'"
            )));
        }
        if self.api.max_limit == 0 {
            return Err(ConfigError::Invalid(
                "[api] max_limit: must be at least 1".into(),
            ));
        }
        if let Some(reason) = self.api.tls_problem() {
            return Err(ConfigError::Invalid(format!("[api] {reason}")));
        }
        if let Some(reason) = public_endpoint_problem(&self.api.public_endpoint) {
            return Err(ConfigError::Invalid(format!(
                "[api] public_endpoint: {reason}"
            )));
        }
        for driver in split_list(&self.cluster_template.kubernetes_allowed_network_drivers) {
            if driver != "all"
                && !crate::domain::template::NETWORK_DRIVERS.contains(&driver.as_str())
            {
                return Err(ConfigError::Invalid(format!(
                    "[cluster_template] kubernetes_allowed_network_drivers: unknown network driver '{driver}'"
                )));
            }
        }
        let n = &self.oslo_messaging_notifications;
        if n.driver == NotificationDriver::Messagingv2 && self.notification_topics().is_empty() {
            return Err(ConfigError::Invalid(
                "[oslo_messaging_notifications] topics: at least one topic is needed".into(),
            ));
        }
        if n.relay_batch_size == 0 {
            return Err(ConfigError::Invalid(
                "[oslo_messaging_notifications] relay_batch_size: must be at least 1".into(),
            ));
        }
        if !(n.relay_poll_interval.is_finite() && n.relay_poll_interval > 0.0) {
            return Err(ConfigError::Invalid(
                "[oslo_messaging_notifications] relay_poll_interval: must be a positive number of seconds".into(),
            ));
        }
        if self.default.auth_strategy == AuthStrategy::Keystone
            && self.keystone_authtoken.auth_url.trim().is_empty()
        {
            return Err(ConfigError::Invalid(
                "[keystone_authtoken] auth_url: must be set with [DEFAULT] auth_strategy = keystone"
                    .into(),
            ));
        }
        if let Err(reason) = self.health_probe.validate() {
            return Err(ConfigError::Invalid(format!("[health_probe] {reason}")));
        }
        if n.relay_claim_timeout < 3 {
            return Err(ConfigError::Invalid(
                "[oslo_messaging_notifications] relay_claim_timeout: must be at least 3 seconds"
                    .into(),
            ));
        }
        Ok(())
    }

    pub fn notification_topics(&self) -> Vec<String> {
        split_list(&self.oslo_messaging_notifications.topics)
    }
}

/// Refuses sections and options this version does not know, naming them.
fn check_known_options(raw: &config::Config) -> Result<(), ConfigError> {
    let known = serde_json::to_value(Settings::default())
        .map_err(|e| ConfigError::Invalid(e.to_string()))?;
    let table: std::collections::BTreeMap<String, config::Value> = raw
        .clone()
        .try_deserialize()
        .map_err(|e| ConfigError::Invalid(e.to_string()))?;
    let shown = |section: &str| section_label(section).to_string();
    for (section, value) in table {
        let Some(options) = known.get(&section).and_then(|v| v.as_object()) else {
            return Err(ConfigError::Invalid(format!(
                "unknown section [{}]",
                shown(&section)
            )));
        };
        let given = value.into_table().map_err(|_| {
            ConfigError::Invalid(format!(
                "[{}] must be a section of options",
                shown(&section)
            ))
        })?;
        if let Some(unknown) = given.keys().find(|k| !options.contains_key(*k)) {
            return Err(ConfigError::Invalid(format!(
                "[{}] {unknown}: unknown option",
                shown(&section)
            )));
        }
    }
    Ok(())
}

/// Turns serde's wording into the `[section] option` form operators know from oslo.config.
/// Unknown options never get here: [`check_known_options`] names them first.
fn describe(err: config::ConfigError) -> String {
    let text = err.to_string();
    // config renders "invalid type: ... for key `api.port`".
    if let Some((what, key)) = text.rsplit_once(" for key `") {
        let key = key.trim_end_matches('`');
        if let Some((section, option)) = key.split_once('.') {
            return format!("[{}] {option}: {what}", section_label(section));
        }
    }
    text
}

/// The section as written in the file (`[DEFAULT]` is deserialised as `default`).
fn section_label(section: &str) -> &str {
    if section == "default" {
        "DEFAULT"
    } else {
        section
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Write;

    #[test]
    fn the_health_probe_timeout_must_fit_in_its_interval_and_thresholds_be_positive() {
        let mut s = Settings::default();
        assert!(s.validate().is_ok());
        assert_eq!(
            s.health_probe.detection_bound(),
            std::time::Duration::from_secs(95)
        );
        assert_eq!(
            s.health_probe.recovery_bound(),
            std::time::Duration::from_secs(35)
        );
        s.health_probe.timeout = 31.0;
        let err = s.validate().expect_err("timeout past the interval");
        assert!(err.to_string().contains("[health_probe] timeout"), "{err}");
        s.health_probe.timeout = 0.5;
        s.health_probe.failure_threshold = 0;
        let err = s.validate().expect_err("no threshold");
        assert!(err.to_string().contains("[health_probe]"), "{err}");
        s.health_probe.failure_threshold = 3;
        s.health_probe.concurrency = 0;
        assert!(s.validate().is_err());
    }

    #[test]
    fn health_probe_networks_must_be_cidr_lists() {
        let mut s = Settings::default();
        s.health_probe.allowed_networks = "10.0.0.0/8, 192.168.0.0/16".into();
        s.health_probe.denied_networks = "10.1.0.0/16".into();
        assert!(s.validate().is_ok());
        s.health_probe.denied_networks = "10.1.0.0/16, intranet".into();
        let err = s.validate().expect_err("not a network");
        assert!(
            err.to_string()
                .contains("[health_probe] denied_networks: 'intranet'"),
            "{err}"
        );
    }

    #[test]
    fn tls_needs_a_certificate_and_key_and_files_need_tls() {
        let mut s = Settings::default();
        s.api.enabled_ssl = true;
        let err = s.validate().expect_err("no certificate");
        assert!(
            err.to_string()
                .contains("[api] ssl_cert_file: must be set with enabled_ssl = true"),
            "{err}"
        );
        s.api.ssl_cert_file = "/etc/fleetyard/tls.crt".into();
        let err = s.validate().expect_err("no key");
        assert!(err.to_string().contains("[api] ssl_key_file"), "{err}");
        s.api.ssl_key_file = "/etc/fleetyard/tls.key".into();
        assert!(s.validate().is_ok());
        assert_eq!(s.api.scheme(), "https");
        s.api.enabled_ssl = false;
        let err = s.validate().expect_err("files without TLS");
        assert!(
            err.to_string()
                .contains("[api] ssl_cert_file: set, but enabled_ssl is false"),
            "{err}"
        );
    }

    #[test]
    fn the_metrics_address_must_be_an_ip_and_a_port() {
        let mut s = Settings::default();
        s.metrics.listen_address = "127.0.0.1:9464".into();
        assert!(s.validate().is_ok());
        s.metrics.listen_address = "localhost".into();
        let err = s.validate().expect_err("no port");
        assert!(
            err.to_string()
                .contains("[metrics] listen_address: expected an IP address and port"),
            "{err}"
        );
    }

    fn load_text(text: &str) -> Result<Settings, ConfigError> {
        let mut file = tempfile_in_target();
        file.1.write_all(text.as_bytes()).expect("write config");
        Settings::load(Some(&file.0))
    }

    fn tempfile_in_target() -> (PathBuf, std::fs::File) {
        let dir = std::env::temp_dir().join(format!("fleetyard-conf-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("fleetyard.conf");
        let file = std::fs::File::create(&path).expect("create");
        (path, file)
    }

    #[test]
    fn built_in_defaults_are_the_embedded_quick_start() {
        let s = Settings::default();
        assert_eq!(s.database.connection.expose(), "sqlite://fleetyard.sqlite");
        assert_eq!(s.default.auth_strategy, AuthStrategy::Noauth);
        assert_eq!(
            s.oslo_messaging_notifications.driver,
            NotificationDriver::Log
        );
        assert_eq!((s.api.host.as_str(), s.api.port), ("127.0.0.1", 9511));
    }

    #[test]
    fn an_ini_file_in_openstack_shape_is_read() {
        let s = load_text(
            "[DEFAULT]\nauth_strategy = jwt\nhost = node-1\n[api]\nport = 9999\n[database]\nconnection = postgres://x@h/db\n[oslo_messaging_notifications]\ndriver = messagingv2\n",
        )
        .expect("valid");
        assert_eq!(s.default.auth_strategy, AuthStrategy::Jwt);
        assert_eq!(s.default.host, "node-1");
        assert_eq!(s.api.port, 9999);
        assert_eq!(s.database.connection.expose(), "postgres://x@h/db");
        assert_eq!(
            s.oslo_messaging_notifications.driver,
            NotificationDriver::Messagingv2
        );
    }

    #[test]
    fn the_public_endpoint_and_proxy_header_parsing_are_read_and_checked() {
        let s = load_text(
            "[api]\npublic_endpoint = https://cloud.example/container-infra/\n[oslo_middleware]\nenable_proxy_headers_parsing = true\n",
        )
        .expect("valid");
        assert_eq!(
            s.api.public_endpoint,
            "https://cloud.example/container-infra/"
        );
        assert!(s.oslo_middleware.enable_proxy_headers_parsing);
        for (value, reason) in [
            ("cloud.example/x", "expected an http:// or https:// URL"),
            ("https:///x", "the URL has no host"),
            ("https://cloud.example/x?a=1", "without query"),
            ("https://cloud.example/a b", "without query"),
            ("https://cloud.example/container-infra/v1", "without /v1"),
        ] {
            let err = load_text(&format!("[api]\npublic_endpoint = {value}\n"))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains("[api] public_endpoint: "), "{value}: {err}");
            assert!(err.contains(reason), "{value}: {err}");
        }
    }

    #[test]
    fn an_unknown_option_names_section_and_option() {
        let err = load_text("[api]\nportt = 1\n").expect_err("must fail");
        assert_eq!(
            err.to_string(),
            "invalid configuration: [api] portt: unknown option"
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_names_the_option() {
        let err = load_text("[api]\nport = many\n").expect_err("must fail");
        let text = err.to_string();
        assert!(text.contains("[api] port"), "{text}");
    }

    #[test]
    fn database_timeouts_are_read_and_checked() {
        let s =
            load_text("[database]\npool_timeout = 0.5\nstatement_timeout = 3\n").expect("valid");
        assert_eq!(s.database.pool_timeout, 0.5);
        assert_eq!(s.database.statement_timeout, 3.0);
        for text in [
            "pool_timeout = 0",
            "statement_timeout = -1",
            "statement_timeout = inf",
        ] {
            let err = load_text(&format!("[database]\n{text}\n")).expect_err(text);
            assert!(
                err.to_string()
                    .contains("must be a number of seconds from 0.01 to 3600"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_node_limit_below_one_is_refused_with_its_name() {
        let err = load_text("[cluster]\nmax_node_count = 0\n").expect_err("must fail");
        assert_eq!(
            err.to_string(),
            "invalid configuration: [cluster] max_node_count: must be between 1 and 100000"
        );
        assert!(load_text("[cluster]\nmax_node_count = 100001\n").is_err());
        let s = load_text("[cluster]\nmax_node_count = 50\n").expect("valid");
        assert_eq!(s.cluster.max_node_count, 50);
        assert_eq!(Settings::default().cluster.max_node_count, 1000);
    }

    #[test]
    fn a_bad_enum_value_names_the_option() {
        let err = load_text("[DEFAULT]\nauth_strategy = kerberos\n").expect_err("must fail");
        let text = err.to_string();
        assert!(
            text.contains("auth_strategy") || text.contains("kerberos"),
            "{text}"
        );
    }

    #[test]
    fn keystone_auth_needs_an_auth_url() {
        let err = load_text("[DEFAULT]\nauth_strategy = keystone\n").expect_err("must fail");
        assert_eq!(
            err.to_string(),
            "invalid configuration: [keystone_authtoken] auth_url: must be set with [DEFAULT] auth_strategy = keystone"
        );
    }

    #[test]
    fn an_unknown_section_is_named() {
        let err = load_text("[databse]\nconnection = x\n").expect_err("must fail");
        assert_eq!(
            err.to_string(),
            "invalid configuration: unknown section [databse]"
        );
    }

    #[test]
    fn a_missing_explicit_file_is_an_error() {
        let err =
            Settings::load(Some(Path::new("/nonexistent/fleetyard.conf"))).expect_err("must fail");
        assert!(err.to_string().contains("/nonexistent/fleetyard.conf"));
    }

    #[test]
    fn jwt_settings_deserialize_from_string_values() {
        let input = json!({
            "algorithms": "HS256",
            "leeway": "10",
            "key_file": "/x",
            "issuer": "https://idp.example",
        });
        let s: JwtSettings = serde_json::from_value(input).unwrap();
        assert_eq!(
            s,
            JwtSettings {
                algorithms: "HS256".to_string(),
                leeway: 10,
                key_file: Some(PathBuf::from("/x")),
                issuer: Some("https://idp.example".to_string()),
                ..JwtSettings::default()
            }
        );
        let numeric: JwtSettings = serde_json::from_value(json!({"leeway": 5})).unwrap();
        assert_eq!(numeric.leeway, 5);
        assert!(serde_json::from_value::<JwtSettings>(json!({"leeway": "soon"})).is_err());
        assert!(serde_json::from_value::<JwtSettings>(json!({"leeway": "-1"})).is_err());
        assert!(serde_json::from_value::<JwtSettings>(json!({"keyfile": "/x"})).is_err());
        let parsed: JwtSettings = serde_json::from_str("{\"leeway\": \" 7 \"}").unwrap();
        assert_eq!(parsed.leeway, 7);
    }

    #[test]
    fn jwt_settings_have_documented_defaults() {
        let s: JwtSettings = serde_json::from_value(json!({})).unwrap();
        assert_eq!(s, JwtSettings::default());
        assert_eq!(s.algorithms, "RS256");
        assert_eq!(s.user_id_claim, "sub");
        assert_eq!(s.project_id_claim, "project_id");
        assert_eq!(s.roles_claim, "roles");
        assert_eq!(s.domain_id_claim, "domain_id");
        assert_eq!(s.leeway, 30);
        assert_eq!(s.key_file, None);
        assert_eq!(s.jwks_file, None);
    }

    #[test]
    fn secrets_do_not_show_in_debug_output() {
        let s = Secret::new("hunter2");
        assert!(!format!("{s:?}").contains("hunter2"));
    }
}

#[cfg(test)]
mod sample_tests {
    use super::*;

    /// etc/fleetyard.conf.sample documents every option with its default: uncommenting every
    /// option line (except those whose default depends on the machine) must load and give the
    /// built-in defaults.
    #[test]
    fn the_sample_configuration_documents_every_option_with_its_default() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/etc/fleetyard.conf.sample");
        let text = std::fs::read_to_string(path).expect("sample exists");
        let mut uncommented = String::new();
        let mut options = 0;
        for line in text.lines() {
            let option = line.strip_prefix('#').filter(|l| {
                let l = l.trim_start();
                l.split_once('=').is_some_and(|(k, _)| {
                    let k = k.trim();
                    !k.is_empty()
                        && !k.contains(' ')
                        && k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                })
            });
            match option {
                Some(l) if l.starts_with("host = <") || l.starts_with("policy_file") => {}
                Some(l) => {
                    options += 1;
                    uncommented.push_str(l);
                    uncommented.push('\n');
                }
                None => {
                    uncommented.push_str(line);
                    uncommented.push('\n');
                }
            }
        }
        let dir = std::env::temp_dir().join(format!("fleetyard-sample-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("fleetyard.conf");
        std::fs::write(&file, uncommented).expect("write");
        let mut loaded = Settings::load(Some(&file)).expect("every sample option is valid");
        // An empty [jwt] path or string means "not set" to the verifier.
        let empty_path = |p: &Option<PathBuf>| p.as_ref().is_some_and(|p| p.as_os_str().is_empty());
        if empty_path(&loaded.jwt.key_file) {
            loaded.jwt.key_file = None;
        }
        if empty_path(&loaded.jwt.jwks_file) {
            loaded.jwt.jwks_file = None;
        }
        loaded.jwt.issuer = loaded.jwt.issuer.filter(|s| !s.is_empty());
        loaded.jwt.audience = loaded.jwt.audience.filter(|s| !s.is_empty());
        let mut defaults = Settings::default();
        defaults.default.host = loaded.default.host.clone();
        assert_eq!(loaded, defaults);
        assert!(options >= 40, "only {options} options documented");
    }
}
