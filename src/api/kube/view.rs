//! Clusters as the registry shows them: a cluster row (and what its statement brought from
//! other tables) into a wire `Cluster`, and a change-log line written before the log kept
//! objects into the object a `DELETED` watch event carries.

use base64::Engine;
use chrono::{DateTime, SecondsFormat, Utc};

use super::objects::{
    AuthInfo, Cluster, ClusterCondition, ClusterSpec, ClusterStatus, KubernetesApiEndpoints,
    ObjectMeta, ObjectReference, ServerAddressByClientCidr, Time, API_VERSION, KIND,
};
use crate::domain::job::retry::Blocked;
use crate::domain::registry::{self, ObjectRef, NAME_ANNOTATION};
use crate::domain::status::{self, Verb};
use crate::store::{ClusterChange, RegistryEntry};

/// `metav1.Time`: RFC 3339 in UTC with seconds.
pub fn kube_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// k8s-openapi's `metav1.Time` of an instant, written as [`kube_time`] writes it (whole
/// seconds; an instant past jiff's years -9999 to 9999, which no stored time is, as 1970).
pub fn meta_time(t: DateTime<Utc>) -> Time {
    Time(k8s_openapi::jiff::Timestamp::from_second(t.timestamp()).unwrap_or_default())
}

fn reference(r: &Option<ObjectRef>) -> Option<ObjectReference> {
    r.as_ref().map(|r| ObjectReference {
        kind: r.kind.clone(),
        name: r.name.clone(),
        namespace: r.namespace.clone(),
    })
}

/// The metadata of the cluster named `name` (its own name) whose registry name is
/// `registry_name`: a registry name that is not the cluster's own name brings the annotation
/// holding the own name.
#[allow(clippy::too_many_arguments)]
fn metadata(
    registry_name: String,
    name: &str,
    uuid: &uuid::Uuid,
    project: &str,
    labels: &std::collections::BTreeMap<String, String>,
    annotations: &std::collections::BTreeMap<String, String>,
    created: DateTime<Utc>,
    resource_version: i64,
) -> ObjectMeta {
    let mut annotations = annotations.clone();
    if registry_name != name {
        annotations.insert(NAME_ANNOTATION.to_string(), name.to_string());
    }
    ObjectMeta {
        name: Some(registry_name).filter(|n| !n.is_empty()),
        namespace: Some(project.to_string()).filter(|p| !p.is_empty()),
        uid: Some(uuid.to_string()),
        resource_version: Some(resource_version.to_string()),
        creation_timestamp: Some(meta_time(created)),
        labels: Some(labels.clone()).filter(|l| !l.is_empty()),
        annotations: Some(annotations).filter(|a| !a.is_empty()),
        ..ObjectMeta::default()
    }
}

/// The metadata of an object being deleted since `at` (unchanged for `None`).
fn with_deletion(mut metadata: ObjectMeta, at: Option<DateTime<Utc>>) -> ObjectMeta {
    if let Some(at) = at {
        metadata.deletion_timestamp = Some(meta_time(at));
        metadata.deletion_grace_period_seconds = Some(0);
    }
    metadata
}

/// The `OK` condition: the cluster's health (from the prober or its driver).
fn ok_condition(e: &RegistryEntry) -> ClusterCondition {
    let c = &e.cluster;
    let health = status::health_condition(c.health_status, &c.health_status_reason);
    ClusterCondition {
        type_: registry::PROBER_CONDITION.into(),
        status: health.status.into(),
        last_heartbeat_time: e.last_heartbeat.map(kube_time),
        last_transition_time: Some(kube_time(last_transition(e))),
        reason: Some(health.reason.into()),
        message: health.message,
    }
}

/// When the cluster's health verdict last changed (its last change, or its creation, before
/// the first verdict).
pub fn last_transition(e: &RegistryEntry) -> DateTime<Utc> {
    let c = &e.cluster;
    e.last_transition.or(c.updated_at).unwrap_or(c.created_at)
}

/// The `Blocked` condition, while a `/v1` operation on the cluster waits on a transient
/// refusal of its driver (absent otherwise): `status` `True`, `reason` `CreateBlocked`,
/// `UpdateBlocked` or `DeleteBlocked`, `message` the cluster's `status_reason` (what it waits
/// on, since when, the attempt, the next one, the deadline), `lastTransitionTime` the first
/// refusal, `lastHeartbeatTime` the latest attempt.
fn blocked_condition(e: &RegistryEntry) -> Option<ClusterCondition> {
    let c = &e.cluster;
    let verb = c.status.verb().filter(|_| c.status.is_in_progress())?;
    let message = c.status_reason.as_deref()?;
    let blocked = Blocked::parse(message)?;
    let reason = match verb {
        Verb::Create => "CreateBlocked",
        Verb::Update => "UpdateBlocked",
        Verb::Delete => "DeleteBlocked",
    };
    Some(ClusterCondition {
        type_: registry::BLOCKED_CONDITION.into(),
        status: "True".into(),
        last_heartbeat_time: c.updated_at.map(kube_time),
        last_transition_time: Some(kube_time(blocked.since)),
        reason: Some(reason.into()),
        message: Some(message.to_string()),
    })
}

/// The registry object of a cluster.
pub fn cluster(e: &RegistryEntry) -> Cluster {
    let c = &e.cluster;
    let r = &c.registry;
    let mut metadata = metadata(
        r.name.clone(),
        &c.name,
        &c.uuid.0,
        &c.project_id,
        &r.labels,
        &r.annotations,
        c.created_at,
        r.resource_version,
    );
    metadata.generation = Some(r.generation);
    metadata.finalizers = Some(r.finalizers.clone()).filter(|f| !f.is_empty());
    metadata.generate_name = r.generate_name.clone().filter(|g| !g.is_empty());
    metadata.owner_references = Some(r.owner_references.iter().cloned().map(Into::into).collect())
        .filter(|o: &Vec<_>| !o.is_empty());
    metadata.managed_fields =
        Some(super::managed::wire(&r.managed_fields)).filter(|m| !m.is_empty());
    metadata.deletion_timestamp = r.deletion_timestamp.map(meta_time);
    metadata.deletion_grace_period_seconds =
        r.deletion_timestamp.and(r.deletion_grace_period_seconds);
    let server_endpoints: Vec<ServerAddressByClientCidr> = if r.server_endpoints.is_empty() {
        c.api_address
            .iter()
            .map(|a| ServerAddressByClientCidr {
                client_cidr: "0.0.0.0/0".into(),
                server_address: a.clone(),
            })
            .collect()
    } else {
        r.server_endpoints
            .iter()
            .map(|s| ServerAddressByClientCidr {
                client_cidr: s.client_cidr.clone(),
                server_address: s.server_address.clone(),
            })
            .collect()
    };
    let ca_bundle = e
        .ca_pem
        .as_deref()
        .map(|pem| base64::engine::general_purpose::STANDARD.encode(pem));
    let endpoints =
        (!server_endpoints.is_empty() || ca_bundle.is_some()).then_some(KubernetesApiEndpoints {
            server_endpoints,
            ca_bundle,
        });
    let auth_info = (!r.auth_info.is_empty()).then(|| AuthInfo {
        user: reference(&r.auth_info.user),
        controller: reference(&r.auth_info.controller),
    });
    Cluster {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        metadata,
        spec: ClusterSpec {
            kubernetes_api_endpoints: endpoints,
            auth_info,
        },
        status: ClusterStatus {
            conditions: std::iter::once(ok_condition(e))
                .chain(blocked_condition(e))
                .chain(
                    r.conditions
                        .iter()
                        .filter(|c| {
                            c.type_ != registry::PROBER_CONDITION
                                && c.type_ != registry::BLOCKED_CONDITION
                        })
                        .cloned(),
                )
                .collect(),
        },
    }
}

/// What a change-log line that kept no object (one written before the log kept objects)
/// shows of a cluster that is gone: its metadata, with the registry name derived from its own
/// name as it was then.
pub fn deleted(ch: &ClusterChange) -> Cluster {
    let uuid = ch.cluster_uuid.0;
    Cluster {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        metadata: with_deletion(
            metadata(
                registry::registry_name(&ch.name, &uuid),
                &ch.name,
                &uuid,
                &ch.project_id,
                &ch.registry_labels.0,
                &ch.registry_annotations.0,
                ch.created_at,
                ch.resource_version,
            ),
            ch.deletion_timestamp,
        ),
        spec: ClusterSpec::default(),
        status: ClusterStatus::default(),
    }
}
