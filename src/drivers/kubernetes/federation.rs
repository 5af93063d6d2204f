//! Federation engines. The host cluster runs the federation control plane; members are
//! registered with it. [`Karmada`] (the maintained successor of the archived KubeFed) is the
//! only engine; [`FederationEngine`] is what another one would implement.
//!
//! Karmada, as `karmadactl join` does it in push mode:
//! * control plane: the operator's `Karmada` object (operator.karmada.io/v1alpha1) in
//!   `[kubernetes_driver] karmada_namespace` of the host, named `karmada-<12 hex digits of the
//!   federation uuid>`; or, when the federation's `karmada_instance` property names one, a
//!   Karmada already present there, which is verified and never changed or deleted;
//! * member side: namespace `karmada-cluster`, service account `karmada-<instance>`, a
//!   ClusterRole and ClusterRoleBinding `karmada-controller-manager:karmada-<instance>` (all
//!   verbs on everything, `get` on non-resource URLs), and a service-account token Secret;
//! * control-plane side: a Secret `karmada-cluster/<member>` with `token` and `caBundle`, and a
//!   `Cluster` (cluster.karmada.io/v1alpha1) `<member>` with `apiEndpoint`, `secretRef` and
//!   `syncMode: Push`. `<member>` is the member's Cluster API name (`fy-…`).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::domain::federation::Federation;
use crate::drivers::{DriverError, DriverResult, FederationProgress, Phase};

use super::client::{endpoint_of, parse_kubeconfig, Endpoint, Kube};
use super::render::{LABEL_CLUSTER_UUID, LABEL_FEDERATION_UUID, LABEL_MANAGED_BY, MANAGED_BY};
use super::status::condition;

pub const KARMADA_OPERATOR_API: &str = "operator.karmada.io/v1alpha1";
pub const KARMADA_CLUSTER_API: &str = "cluster.karmada.io/v1alpha1";
/// Where member credentials live, on the members and on the control plane.
pub const KARMADA_CLUSTER_NAMESPACE: &str = "karmada-cluster";
/// Federation property naming a Karmada already present on the host, to use instead of
/// creating one.
pub const INSTANCE_PROPERTY: &str = "karmada_instance";

/// A cluster Fleetyard can talk to, from the kubeconfig Cluster API keeps for it.
#[derive(Debug, Clone)]
pub struct ClusterAccess {
    /// The cluster's Cluster API name (`fy-…`).
    pub name: String,
    pub uuid: String,
    pub kube: Kube,
    pub endpoint: Endpoint,
}

#[async_trait]
pub trait FederationEngine: Send + Sync {
    fn name(&self) -> &'static str;
    /// Makes sure the control plane exists on the host: creates it, or verifies the one the
    /// federation names. `Done` when it is already ready.
    async fn ensure_control_plane(
        &self,
        host: &ClusterAccess,
        fed: &Federation,
    ) -> DriverResult<FederationProgress>;
    /// Where the control plane is: `Complete` once ready; while deleting, `Gone` once removed.
    async fn control_plane_phase(
        &self,
        host: &ClusterAccess,
        fed: &Federation,
        deleting: bool,
    ) -> DriverResult<Phase>;
    /// Registers a member: credentials on the member, registration on the control plane.
    async fn join(
        &self,
        host: &ClusterAccess,
        fed: &Federation,
        member: &ClusterAccess,
    ) -> DriverResult<()>;
    /// Removes a member from the control plane (an error here fails the unjoin), then cleans
    /// the member up as far as it can: the answer is a note for `status_reason` when that
    /// best-effort part could not be done. `member` is `Err(why)` when Fleetyard cannot reach
    /// it at all.
    async fn unjoin(
        &self,
        host: &ClusterAccess,
        fed: &Federation,
        member_name: &str,
        member: Result<&ClusterAccess, String>,
    ) -> DriverResult<Option<String>>;
    /// Removes the control plane (unless it was only adopted). `Started` while it goes away.
    async fn remove_control_plane(
        &self,
        host: &ClusterAccess,
        fed: &Federation,
    ) -> DriverResult<FederationProgress>;
    /// Whether the control plane belongs to the federation (created by it), so that deleting
    /// the federation removes everything registered in it anyway.
    fn owns_control_plane(&self, fed: &Federation) -> bool;
}

/// The Karmada engine.
#[derive(Debug, Clone)]
pub struct Karmada {
    pub namespace: String,
    pub apiserver_service_type: String,
    pub timeout: Duration,
    /// Attempts (and the pause between them) at reading a member's service-account token.
    pub token_attempts: u32,
    pub token_pause: Duration,
}

impl Karmada {
    pub fn new(namespace: &str, apiserver_service_type: &str, timeout: Duration) -> Karmada {
        Karmada {
            namespace: namespace.into(),
            apiserver_service_type: apiserver_service_type.into(),
            timeout,
            token_attempts: 10,
            token_pause: Duration::from_millis(300),
        }
    }

    /// The Karmada object of a federation.
    pub fn instance(fed: &Federation) -> String {
        match fed
            .properties
            .get(INSTANCE_PROPERTY)
            .filter(|v| !v.trim().is_empty())
        {
            Some(name) => name.trim().to_string(),
            None => {
                let hex = fed.uuid.0.simple().to_string();
                format!("karmada-{}", &hex[..12])
            }
        }
    }

    fn adopted(fed: &Federation) -> bool {
        fed.properties
            .get(INSTANCE_PROPERTY)
            .is_some_and(|v| !v.trim().is_empty())
    }

    /// The operator's name for the admin kubeconfig Secret of an instance.
    pub fn admin_secret_name(instance: &str) -> String {
        if instance.contains("karmada") {
            format!("{instance}-admin-config")
        } else {
            format!("{instance}-karmada-admin-config")
        }
    }

    pub fn service_account(fed: &Federation) -> String {
        let instance = Self::instance(fed);
        if instance.starts_with("karmada-") {
            instance
        } else {
            format!("karmada-{instance}")
        }
    }

    pub fn role_name(fed: &Federation) -> String {
        format!("karmada-controller-manager:{}", Self::service_account(fed))
    }

    fn labels(fed: &Federation) -> Value {
        json!({
            LABEL_MANAGED_BY: MANAGED_BY,
            LABEL_FEDERATION_UUID: fed.uuid.to_string(),
            "karmada.io/system": "true",
        })
    }

    /// The `Karmada` object Fleetyard creates for a federation.
    pub fn render_instance(&self, host: &ClusterAccess, fed: &Federation) -> Value {
        json!({
            "apiVersion": KARMADA_OPERATOR_API,
            "kind": "Karmada",
            "metadata": {
                "name": Self::instance(fed),
                "namespace": self.namespace,
                "labels": {
                    LABEL_MANAGED_BY: MANAGED_BY,
                    LABEL_FEDERATION_UUID: fed.uuid.to_string(),
                    LABEL_CLUSTER_UUID: host.uuid,
                },
                "annotations": {"fleetyard/federation-name": fed.name},
            },
            "spec": {
                "components": {
                    "karmadaAPIServer": {"serviceType": self.apiserver_service_type},
                },
            },
        })
    }

    /// The member-side objects of a join, in the order they are applied.
    pub fn member_objects(&self, fed: &Federation, member: &ClusterAccess) -> Vec<Value> {
        let sa = Self::service_account(fed);
        let role = Self::role_name(fed);
        let mut labels = Self::labels(fed);
        labels[LABEL_CLUSTER_UUID] = json!(member.uuid);
        vec![
            json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": KARMADA_CLUSTER_NAMESPACE, "labels": {
                    LABEL_MANAGED_BY: MANAGED_BY, "karmada.io/system": "true",
                }},
            }),
            json!({
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": sa, "namespace": KARMADA_CLUSTER_NAMESPACE, "labels": labels},
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": role, "labels": labels},
                "rules": [
                    {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                    {"nonResourceURLs": ["*"], "verbs": ["get"]},
                ],
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": role, "labels": labels},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": KARMADA_CLUSTER_NAMESPACE}],
            }),
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "type": "kubernetes.io/service-account-token",
                "metadata": {
                    "name": format!("{sa}-token"),
                    "namespace": KARMADA_CLUSTER_NAMESPACE,
                    "labels": labels,
                    "annotations": {"kubernetes.io/service-account.name": sa},
                },
            }),
        ]
    }

    /// The control-plane-side objects of a join: the credentials Secret and the `Cluster`.
    pub fn control_plane_objects(
        fed: &Federation,
        member: &ClusterAccess,
        token: &str,
        ca: Option<&str>,
    ) -> Vec<Value> {
        let mut labels = Self::labels(fed);
        labels[LABEL_CLUSTER_UUID] = json!(member.uuid);
        let mut data = json!({"token": token});
        if let Some(ca) = ca {
            data["caBundle"] = json!(ca);
        }
        let mut spec = json!({
            "syncMode": "Push",
            "apiEndpoint": member.endpoint.server,
            "secretRef": {"namespace": KARMADA_CLUSTER_NAMESPACE, "name": member.name},
        });
        if ca.is_none() {
            spec["insecureSkipTLSVerification"] = json!(true);
        }
        vec![
            json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": KARMADA_CLUSTER_NAMESPACE, "labels": {"karmada.io/system": "true"}},
            }),
            json!({
                "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": member.name, "namespace": KARMADA_CLUSTER_NAMESPACE, "labels": labels},
                "data": data,
            }),
            json!({
                "apiVersion": KARMADA_CLUSTER_API, "kind": "Cluster",
                "metadata": {"name": member.name, "labels": labels},
                "spec": spec,
            }),
        ]
    }

    async fn instance_object(
        &self,
        host: &ClusterAccess,
        fed: &Federation,
    ) -> DriverResult<Option<Value>> {
        host.kube
            .get(
                KARMADA_OPERATOR_API,
                "Karmada",
                Some(&self.namespace),
                &Self::instance(fed),
            )
            .await
    }

    /// A client for the Karmada API server, from the admin kubeconfig the operator publishes.
    async fn control_plane(&self, host: &ClusterAccess, fed: &Federation) -> DriverResult<Kube> {
        let instance = Self::instance(fed);
        let Some(obj) = self.instance_object(host, fed).await? else {
            return Err(DriverError::Permanent(format!(
                "The Karmada control plane {}/{instance} of federation {} is missing from the host cluster {}.",
                self.namespace, fed.name, host.name
            )));
        };
        let reference = &obj["status"]["secretRef"];
        let namespace = reference["namespace"]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or(&self.namespace);
        let default_name = Self::admin_secret_name(&instance);
        let name = reference["name"]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or(&default_name);
        let mut text = host.kube.secret_value(namespace, name, "config").await?;
        if text.is_none() {
            text = host
                .kube
                .secret_value(namespace, name, "kubeconfig")
                .await?;
        }
        let Some(text) = text else {
            return Err(DriverError::Transient(format!(
                "The Karmada control plane {instance} on the host cluster {} has not published its admin kubeconfig (Secret {namespace}/{name}) yet.",
                host.name
            )));
        };
        let what = format!("the Karmada control plane {instance}");
        let kc = parse_kubeconfig(&text, &what)?;
        Kube::connect(kc, None, what, self.timeout).await
    }

    /// The token the member's token controller put in the service-account Secret.
    async fn member_token(
        &self,
        fed: &Federation,
        member: &ClusterAccess,
    ) -> DriverResult<(String, Option<String>)> {
        let name = format!("{}-token", Self::service_account(fed));
        for attempt in 0..self.token_attempts.max(1) {
            if attempt > 0 {
                tokio::time::sleep(self.token_pause).await;
            }
            let secret = member
                .kube
                .get("v1", "Secret", Some(KARMADA_CLUSTER_NAMESPACE), &name)
                .await?;
            if let Some(token) = secret
                .as_ref()
                .and_then(|s| s["data"]["token"].as_str())
                .filter(|t| !t.is_empty())
            {
                let ca = secret
                    .as_ref()
                    .and_then(|s| s["data"]["ca.crt"].as_str())
                    .filter(|c| !c.is_empty())
                    .map(str::to_string);
                return Ok((token.to_string(), ca));
            }
        }
        Err(DriverError::Transient(format!(
            "The member cluster {} has not issued the token of {KARMADA_CLUSTER_NAMESPACE}/{name} yet.",
            member.name
        )))
    }

    /// Member-side clean-up; the first failure stops it and is returned.
    async fn clean_member(
        &self,
        host: &ClusterAccess,
        fed: &Federation,
        member: &ClusterAccess,
    ) -> DriverResult<()> {
        let sa = Self::service_account(fed);
        let role = Self::role_name(fed);
        let rbac = "rbac.authorization.k8s.io/v1";
        let kube = &member.kube;
        kube.delete(rbac, "ClusterRoleBinding", None, &role).await?;
        kube.delete(rbac, "ClusterRole", None, &role).await?;
        kube.delete(
            "v1",
            "Secret",
            Some(KARMADA_CLUSTER_NAMESPACE),
            &format!("{sa}-token"),
        )
        .await?;
        kube.delete("v1", "ServiceAccount", Some(KARMADA_CLUSTER_NAMESPACE), &sa)
            .await?;
        // The namespace goes with the last federation's service account, and never on the
        // host, whose control plane may use it.
        if member.uuid != host.uuid {
            let left = kube
                .list(
                    "v1",
                    "ServiceAccount",
                    Some(KARMADA_CLUSTER_NAMESPACE),
                    &format!("{LABEL_MANAGED_BY}={MANAGED_BY}"),
                )
                .await?;
            if left.is_empty() {
                kube.delete("v1", "Namespace", None, KARMADA_CLUSTER_NAMESPACE)
                    .await?;
            }
        }
        Ok(())
    }
}

fn ready(obj: &Value) -> bool {
    condition(obj, "Ready").is_some_and(|c| c["status"].as_str() == Some("True"))
}

#[async_trait]
impl FederationEngine for Karmada {
    fn name(&self) -> &'static str {
        "karmada"
    }

    fn owns_control_plane(&self, fed: &Federation) -> bool {
        !Self::adopted(fed)
    }

    async fn ensure_control_plane(
        &self,
        host: &ClusterAccess,
        fed: &Federation,
    ) -> DriverResult<FederationProgress> {
        let instance = Self::instance(fed);
        let existing = self.instance_object(host, fed).await?;
        if Self::adopted(fed) {
            return match existing {
                None => Err(DriverError::Permanent(format!(
                    "The host cluster {} has no Karmada {}/{instance} (named by the federation property {INSTANCE_PROPERTY}).",
                    host.name, self.namespace
                ))),
                Some(obj) if ready(&obj) => Ok(FederationProgress::Done),
                Some(_) => Ok(FederationProgress::Started),
            };
        }
        if let Some(obj) = &existing {
            let owner = obj["metadata"]["labels"][LABEL_FEDERATION_UUID].as_str();
            if owner != Some(fed.uuid.to_string().as_str()) {
                return Err(DriverError::Permanent(format!(
                    "The host cluster {} already has a Karmada {}/{instance} that federation {} did not create; name it in the property {INSTANCE_PROPERTY} to use it.",
                    host.name, self.namespace, fed.name
                )));
            }
        }
        if host
            .kube
            .get("v1", "Namespace", None, &self.namespace)
            .await?
            .is_none()
        {
            host.kube
                .apply(&json!({
                    "apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": self.namespace, "labels": {LABEL_MANAGED_BY: MANAGED_BY}},
                }))
                .await?;
        }
        let applied = host.kube.apply(&self.render_instance(host, fed)).await?;
        Ok(if ready(&applied) {
            FederationProgress::Done
        } else {
            FederationProgress::Started
        })
    }

    async fn control_plane_phase(
        &self,
        host: &ClusterAccess,
        fed: &Federation,
        deleting: bool,
    ) -> DriverResult<Phase> {
        let existing = self.instance_object(host, fed).await?;
        Ok(match (existing, deleting) {
            (None, true) => Phase::Gone,
            (Some(_), true) if Self::adopted(fed) => Phase::Gone,
            (Some(_), true) => Phase::InProgress,
            (None, false) => Phase::Failed(format!(
                "The Karmada control plane {}/{} disappeared from the host cluster {}.",
                self.namespace,
                Self::instance(fed),
                host.name
            )),
            (Some(obj), false) if ready(&obj) => Phase::Complete,
            (Some(_), false) => Phase::InProgress,
        })
    }

    async fn join(
        &self,
        host: &ClusterAccess,
        fed: &Federation,
        member: &ClusterAccess,
    ) -> DriverResult<()> {
        let karmada = self.control_plane(host, fed).await?;
        for obj in self.member_objects(fed, member) {
            member.kube.apply(&obj).await?;
        }
        let (token, token_ca) = self.member_token(fed, member).await?;
        let ca = member.endpoint.ca_data.clone().or(token_ca);
        for obj in Self::control_plane_objects(fed, member, &token, ca.as_deref()) {
            karmada.apply(&obj).await?;
        }
        Ok(())
    }

    async fn unjoin(
        &self,
        host: &ClusterAccess,
        fed: &Federation,
        member_name: &str,
        member: Result<&ClusterAccess, String>,
    ) -> DriverResult<Option<String>> {
        let karmada = self.control_plane(host, fed).await?;
        karmada
            .delete(KARMADA_CLUSTER_API, "Cluster", None, member_name)
            .await?;
        karmada
            .delete("v1", "Secret", Some(KARMADA_CLUSTER_NAMESPACE), member_name)
            .await?;
        let why = match member {
            Err(why) => why,
            Ok(m) => match self.clean_member(host, fed, m).await {
                Ok(()) => return Ok(None),
                Err(e) => e.to_string(),
            },
        };
        let sa = Self::service_account(fed);
        Ok(Some(format!(
            "Unjoined {member_name} from the Karmada control plane, but its member-side clean-up (service account {KARMADA_CLUSTER_NAMESPACE}/{sa}, ClusterRole and ClusterRoleBinding {}) was not done: {} Remove them by hand if the cluster comes back.",
            Self::role_name(fed),
            why.trim_end_matches('.').to_string() + "."
        )))
    }

    async fn remove_control_plane(
        &self,
        host: &ClusterAccess,
        fed: &Federation,
    ) -> DriverResult<FederationProgress> {
        if Self::adopted(fed) {
            return Ok(FederationProgress::Done);
        }
        let existed = host
            .kube
            .delete(
                KARMADA_OPERATOR_API,
                "Karmada",
                Some(&self.namespace),
                &Self::instance(fed),
            )
            .await?;
        Ok(if existed {
            FederationProgress::Started
        } else {
            FederationProgress::Done
        })
    }
}

/// Builds a [`ClusterAccess`] from the kubeconfig Cluster API keeps for a cluster.
pub async fn access_from_kubeconfig(
    name: &str,
    uuid: &str,
    text: &str,
    what: String,
    timeout: Duration,
) -> DriverResult<ClusterAccess> {
    let kc = parse_kubeconfig(text, &what)?;
    let endpoint = endpoint_of(&kc, None).ok_or_else(|| {
        DriverError::Permanent(format!("The kubeconfig of {what} names no server."))
    })?;
    let kube = Kube::connect(kc, None, what, timeout).await?;
    Ok(ClusterAccess {
        name: name.into(),
        uuid: uuid.into(),
        kube,
        endpoint,
    })
}
