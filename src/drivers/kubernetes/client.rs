//! A thin, JSON-shaped layer over `kube`: server-side apply, get, list, delete and merge
//! patch of any kind (`DynamicObject`, so Cluster API and Karmada kinds need no generated
//! types), with every failure turned into a [`DriverError`] a person can act on.

use std::time::Duration;

use base64::Engine;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

use crate::drivers::{DriverError, DriverResult};

/// The field manager of every server-side apply.
pub const FIELD_MANAGER: &str = "fleetyard";

/// One Kubernetes API server, named for messages ("the management cluster", "member cluster
/// fy-…").
#[derive(Clone)]
pub struct Kube {
    client: kube::Client,
    what: String,
    server: String,
}

/// How an eviction went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Eviction {
    /// The Pod is being deleted.
    Evicted,
    /// It no longer exists.
    Gone,
    /// Refused for now (429): a PodDisruptionBudget allows no disruption; the server's words.
    Refused(String),
}

/// What a kubeconfig says about its current cluster, for registering it elsewhere.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub server: String,
    /// Base64 PEM, as kubeconfigs and Secrets carry it.
    pub ca_data: Option<String>,
}

impl std::fmt::Debug for Kube {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kube")
            .field("what", &self.what)
            .field("server", &self.server)
            .finish()
    }
}

/// Parses a kubeconfig document.
pub fn parse_kubeconfig(text: &str, what: &str) -> DriverResult<Kubeconfig> {
    Kubeconfig::from_yaml(text).map_err(|e| {
        DriverError::Permanent(format!("The kubeconfig of {what} cannot be read: {e}."))
    })
}

/// The server and CA of a kubeconfig's current (or only) context.
pub fn endpoint_of(kc: &Kubeconfig, context: Option<&str>) -> Option<Endpoint> {
    let context_name = context
        .map(str::to_string)
        .or_else(|| kc.current_context.clone());
    let cluster_name = match context_name {
        Some(name) => kc
            .contexts
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.context.as_ref())
            .map(|c| c.cluster.clone())?,
        None => kc.clusters.first()?.name.clone(),
    };
    let cluster = kc
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)?
        .cluster
        .as_ref()?;
    Some(Endpoint {
        server: cluster.server.clone()?,
        ca_data: cluster
            .certificate_authority_data
            .clone()
            .filter(|s| !s.is_empty()),
    })
}

impl Kube {
    /// A client for the cluster a kubeconfig names (its `context`, else the current one).
    pub async fn connect(
        kc: Kubeconfig,
        context: Option<&str>,
        what: impl Into<String>,
        timeout: Duration,
    ) -> DriverResult<Kube> {
        let what = what.into();
        let options = KubeConfigOptions {
            context: context.map(str::to_string),
            ..KubeConfigOptions::default()
        };
        let mut config = kube::Config::from_custom_kubeconfig(kc, &options)
            .await
            .map_err(|e| {
                DriverError::Permanent(format!("The kubeconfig of {what} is not usable: {e}."))
            })?;
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        config.write_timeout = Some(timeout);
        config.reset_reader_on_write = true;
        // The conductor retries with backoff; kube's own retries would hide what happened.
        config.default_retry = false;
        let server = config.cluster_url.to_string();
        let client = kube::Client::try_from(config).map_err(|e| {
            DriverError::Permanent(format!(
                "Cannot build a client for {what} at {server}: {e}."
            ))
        })?;
        Ok(Kube {
            client,
            what,
            server,
        })
    }

    pub fn what(&self) -> &str {
        &self.what
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    fn api(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> Api<DynamicObject> {
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        }
    }

    /// Server-side apply (`application/apply-patch+yaml`, field manager `fleetyard`, forced):
    /// creates the object or brings the fields Fleetyard owns to the given values.
    pub async fn apply(&self, obj: &Value) -> DriverResult<Value> {
        let api_version = obj["apiVersion"].as_str().unwrap_or_default();
        let kind = obj["kind"].as_str().unwrap_or_default();
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        let namespace = obj["metadata"]["namespace"].as_str();
        let api = self.api(api_version, kind, namespace);
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let applied = api
            .patch(name, &params, &Patch::Apply(obj))
            .await
            .map_err(|e| self.error(&format!("apply the {kind} {name}"), e))?;
        to_value(applied)
    }

    pub async fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> DriverResult<Option<Value>> {
        let found = self
            .api(api_version, kind, namespace)
            .get_opt(name)
            .await
            .map_err(|e| self.error(&format!("read the {kind} {name}"), e))?;
        found.map(to_value).transpose()
    }

    pub async fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        selector: &str,
    ) -> DriverResult<Vec<Value>> {
        let list = self
            .api(api_version, kind, namespace)
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| self.error(&format!("list the {kind} objects ({selector})"), e))?;
        list.items.into_iter().map(to_value).collect()
    }

    /// Lists objects by field selector (`spec.nodeName=n`); every namespace when `None`.
    pub async fn list_fields(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        fields: &str,
    ) -> DriverResult<Vec<Value>> {
        let list = self
            .api(api_version, kind, namespace)
            .list(&ListParams::default().fields(fields))
            .await
            .map_err(|e| self.error(&format!("list the {kind} objects ({fields})"), e))?;
        list.items.into_iter().map(to_value).collect()
    }

    /// Creates an object; `false` when one of its name already exists (left as it is).
    pub async fn create(&self, obj: &Value) -> DriverResult<bool> {
        let api_version = obj["apiVersion"].as_str().unwrap_or_default();
        let kind = obj["kind"].as_str().unwrap_or_default();
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        let namespace = obj["metadata"]["namespace"].as_str();
        let data: DynamicObject = serde_json::from_value(obj.clone()).map_err(|e| {
            DriverError::Permanent(format!("The {kind} {name} is not a valid object: {e}."))
        })?;
        match self
            .api(api_version, kind, namespace)
            .create(&PostParams::default(), &data)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(self.error(&format!("create the {kind} {name}"), e)),
        }
    }

    /// Evicts a Pod through the Eviction API (policy/v1), as `kubectl drain` does.
    pub async fn evict(&self, namespace: &str, name: &str) -> DriverResult<Eviction> {
        let body = serde_json::json!({
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        });
        match self
            .api("v1", "Pod", Some(namespace))
            .create_subresource::<Value, Value>("eviction", name, &PostParams::default(), &body)
            .await
        {
            Ok(_) => Ok(Eviction::Evicted),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Eviction::Gone),
            Err(kube::Error::Api(s)) if s.code == 429 => {
                Ok(Eviction::Refused(if s.message.is_empty() {
                    s.reason.clone()
                } else {
                    s.message.clone()
                }))
            }
            Err(e) => Err(self.error(&format!("evict the Pod {namespace}/{name}"), e)),
        }
    }

    /// Deletes an object (background propagation); `false` when it was already absent.
    pub async fn delete(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> DriverResult<bool> {
        match self
            .api(api_version, kind, namespace)
            .delete(name, &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
            Err(e) => Err(self.error(&format!("delete the {kind} {name}"), e)),
        }
    }

    /// JSON merge patch of an existing object; `None` when it does not exist.
    pub async fn merge_patch(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
    ) -> DriverResult<Option<Value>> {
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        match self
            .api(api_version, kind, namespace)
            .patch(name, &params, &Patch::Merge(patch))
            .await
        {
            Ok(obj) => to_value(obj).map(Some),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(self.error(&format!("update the {kind} {name}"), e)),
        }
    }

    /// A data key of a Secret, decoded; `None` when the Secret or the key is absent.
    pub async fn secret_value(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> DriverResult<Option<String>> {
        let Some(secret) = self.get("v1", "Secret", Some(namespace), name).await? else {
            return Ok(None);
        };
        let Some(encoded) = secret["data"][key].as_str() else {
            return Ok(None);
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| {
                DriverError::Permanent(format!(
                    "The Secret {namespace}/{name} on {} holds invalid base64 in '{key}': {e}.",
                    self.what
                ))
            })?;
        String::from_utf8(bytes).map(Some).map_err(|_| {
            DriverError::Permanent(format!(
                "The Secret {namespace}/{name} on {} holds non-UTF-8 data in '{key}'.",
                self.what
            ))
        })
    }

    /// Turns a kube error into a driver error: unreachable servers, 409 conflicts, 429 and 5xx
    /// are worth retrying; refusals (400, 422) and denials (401, 403) are not.
    pub fn error(&self, action: &str, e: kube::Error) -> DriverError {
        classify(&self.what, &self.server, action, e)
    }
}

fn to_value(obj: DynamicObject) -> DriverResult<Value> {
    serde_json::to_value(obj)
        .map_err(|e| DriverError::Transient(format!("Unreadable object: {e}.")))
}

pub fn classify(what: &str, server: &str, action: &str, e: kube::Error) -> DriverError {
    match e {
        kube::Error::Api(s) => {
            let message = if s.message.is_empty() {
                s.reason.clone()
            } else {
                s.message.clone()
            };
            match s.code {
                409 => DriverError::Transient(format!(
                    "Conflict on {what} while trying to {action}: {message}; it will be retried."
                )),
                429 | 500..=599 => DriverError::Transient(format!(
                    "{} answered {} while Fleetyard tried to {action}: {message}.",
                    capitalize(what),
                    s.code
                )),
                400 | 422 => DriverError::Permanent(format!(
                    "{} refused to {action} ({} {}): {message}. Check the cluster template and labels.",
                    capitalize(what),
                    s.code,
                    s.reason
                )),
                401 | 403 => DriverError::Permanent(format!(
                    "{} denied Fleetyard the right to {action} ({}): {message}. Check the credentials and RBAC of the kubeconfig Fleetyard uses.",
                    capitalize(what),
                    s.code
                )),
                404 => DriverError::Permanent(format!(
                    "{} has no API for the object Fleetyard tried to {action}: {message}. Is the provider (Cluster API, its infrastructure provider, Karmada) installed there?",
                    capitalize(what)
                )),
                code => DriverError::Permanent(format!(
                    "{} answered {code} while Fleetyard tried to {action}: {message}.",
                    capitalize(what)
                )),
            }
        }
        kube::Error::Auth(err) => {
            DriverError::Permanent(format!("Cannot authenticate to {what} at {server}: {err}."))
        }
        other => DriverError::Transient(format!(
            "Cannot reach {what} at {server} to {action}: {other}."
        )),
    }
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn api_error(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Box::new(Status::failure("boom", reason).with_code(code)))
    }

    #[test]
    fn conflicts_and_server_errors_are_transient_refusals_permanent() {
        let c = |code, reason| {
            classify(
                "the management cluster",
                "https://m:6443",
                "apply the Cluster x",
                api_error(code, reason),
            )
        };
        assert!(matches!(c(409, "Conflict"), DriverError::Transient(_)));
        assert!(matches!(
            c(503, "ServiceUnavailable"),
            DriverError::Transient(_)
        ));
        assert!(matches!(
            c(429, "TooManyRequests"),
            DriverError::Transient(_)
        ));
        let DriverError::Permanent(text) = c(422, "Invalid") else {
            panic!("422 is permanent")
        };
        assert_eq!(
            text,
            "The management cluster refused to apply the Cluster x (422 Invalid): boom. Check the cluster template and labels."
        );
        assert!(matches!(c(403, "Forbidden"), DriverError::Permanent(_)));
    }

    #[test]
    fn the_endpoint_of_a_kubeconfig_is_its_current_cluster() {
        let kc = parse_kubeconfig(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {server: 'https://a:6443', certificate-authority-data: QUJD}\n- name: b\n  cluster: {server: 'https://b:6443'}\ncontexts:\n- name: ctx-b\n  context: {cluster: b, user: u}\n- name: ctx-a\n  context: {cluster: a, user: u}\ncurrent-context: ctx-a\nusers:\n- name: u\n  user: {token: t}\n",
            "test",
        )
        .expect("parses");
        assert_eq!(
            endpoint_of(&kc, None),
            Some(Endpoint {
                server: "https://a:6443".into(),
                ca_data: Some("QUJD".into())
            })
        );
        assert_eq!(
            endpoint_of(&kc, Some("ctx-b")).map(|e| e.server),
            Some("https://b:6443".into())
        );
    }
}
