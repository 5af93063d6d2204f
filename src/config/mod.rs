//! One typed settings tree, loaded once and validated once.
//!
//! Sources, later ones winning: built-in defaults (the embedded quick start), an INI file in
//! OpenStack's shape (`--config-file`, else `etc/fleetyard/fleetyard.conf` when present), then
//! environment variables `FLEETYARD__SECTION__KEY`. An unknown section or option, or a value of
//! the wrong type, fails start-up with one line naming the option.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod conductor;
mod drivers;
mod front_proxy;
mod sections;

pub use drivers::{DriversSection, FakeDriverSection, KubernetesDriverSection};
pub use front_proxy::FrontProxySection;
pub use sections::*;

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
    pub front_proxy: FrontProxySection,
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
        if !self.front_proxy.client_ca_file.trim().is_empty() && !self.api.enabled_ssl {
            return Err(ConfigError::Invalid(
                "[front_proxy] client_ca_file: set, but [api] enabled_ssl is false: a front \
                 proxy's certificate can only be checked over HTTPS"
                    .into(),
            ));
        }
        if let Some(reason) = self.front_proxy.problem() {
            return Err(ConfigError::Invalid(format!("[front_proxy] {reason}")));
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
        if let Some(reason) = self.conductor.retry_problem() {
            return Err(ConfigError::Invalid(format!("[conductor] {reason}")));
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
