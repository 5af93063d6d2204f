//! What a write will store, decided without I/O: the new registered cluster of a create, the
//! row an update leaves, and the managed fields both record.

use serde_json::Value;

use super::parse::Desired;
use crate::api::kube::managed::{self, Part};
use crate::api::kube::objects::{self, API_VERSION};
use crate::api::kube::status::{Cause, KubeError, CLUSTERS};
use crate::api::kube::view;
use crate::api::RequestContext;
use crate::domain::cluster::{Cluster as Row, NewCluster};
use crate::domain::kube_names::DNS1123_SUBDOMAIN_MSG;
use crate::domain::managed_fields::{ManagedFields, ManagerId, Operation};
use crate::domain::names::ClusterName;
use crate::domain::registry::{RegistryMeta, EXTERNAL_DRIVER, EXTERNAL_TEMPLATE};
use crate::domain::status::ClusterStatus;
use crate::domain::ClusterId;
use crate::store::RegistryEntry;

/// The new registered cluster a create inserts.
pub(super) fn new_cluster(
    ctx: &RequestContext,
    namespace: &str,
    d: &Desired,
) -> Result<NewCluster, KubeError> {
    let name = ClusterName::registered(&d.name).ok_or_else(|| {
        KubeError::invalid(
            &CLUSTERS,
            &d.name,
            vec![Cause::invalid(
                "metadata.name",
                &d.name,
                DNS1123_SUBDOMAIN_MSG,
            )],
        )
    })?;
    Ok(NewCluster {
        uuid: ClusterId::new(),
        project_id: namespace.to_string(),
        user_id: ctx.user_id.clone(),
        name,
        cluster_template_id: EXTERNAL_TEMPLATE,
        keypair: None,
        docker_volume_size: None,
        labels: Default::default(),
        master_flavor_id: None,
        flavor_id: None,
        create_timeout: 0,
        discovery_url: None,
        fixed_network: None,
        fixed_subnet: None,
        floating_ip_enabled: false,
        master_lb_enabled: false,
        nodegroups: Vec::new(),
        status: ClusterStatus::CreateComplete,
        registry: RegistryMeta {
            name: d.name.clone(),
            ..d.meta.clone()
        },
        derive_registry_name: false,
    })
}

/// Records the creating manager's fields on `d` (an `Update`, as the API server records a
/// create).
pub(super) fn record_create(
    ctx: &RequestContext,
    namespace: &str,
    d: &mut Desired,
    manager: &str,
) -> Result<(), KubeError> {
    let shown = serde_json::to_value(view::cluster(&preview(&new_cluster(ctx, namespace, d)?)))
        .map_err(KubeError::internal)?;
    let mut m = ManagedFields::default();
    m.update(
        &managed::SCHEMA,
        &Value::Object(Default::default()),
        &managed::tracked(&shown, Part::Main),
        &ManagerId::new(manager, Operation::Update, ""),
        API_VERSION,
        chrono::Utc::now(),
    );
    d.meta.managed_fields = m;
    Ok(())
}

/// The row a write leaves with its managed fields: an apply's (already computed), or the
/// update's fields recorded for `id`; `None` when neither the object nor its managers change.
pub(super) fn with_managed_fields(
    e: &RegistryEntry,
    current: &Value,
    next: Option<Row>,
    applied: Option<ManagedFields>,
    id: &ManagerId,
) -> Result<Option<Row>, KubeError> {
    let changed = next.is_some();
    let mut row = next.unwrap_or_else(|| e.cluster.clone());
    match applied {
        Some(m) => row.registry.managed_fields = m,
        None => {
            let mut shown = e.clone();
            shown.cluster = row.clone();
            let new = serde_json::to_value(view::cluster(&shown)).map_err(KubeError::internal)?;
            row.registry.managed_fields.update(
                &managed::SCHEMA,
                &managed::tracked(current, Part::Main),
                &managed::tracked(&new, Part::Main),
                id,
                API_VERSION,
                chrono::Utc::now(),
            );
        }
    }
    Ok(
        (changed || row.registry.managed_fields != e.cluster.registry.managed_fields)
            .then_some(row),
    )
}

/// What a dry-run create would have stored.
pub(super) fn preview(new: &NewCluster) -> RegistryEntry {
    RegistryEntry {
        cluster: new.provisional(crate::store::sql::now()),
        driver: EXTERNAL_DRIVER.into(),
        node_count: 0,
        ca_pem: new.registry.ca_bundle.clone(),
        last_heartbeat: None,
        last_transition: None,
    }
}

/// Applies `d` to the stored cluster `e`: labels, annotations, and (for a registered cluster)
/// endpoints, CA and credential pointers; a provisioned cluster's spec is the service's.
pub(super) fn changed_row(e: &RegistryEntry, d: &Desired) -> Result<Option<Row>, KubeError> {
    let c = &e.cluster;
    let name = c.registry.name.clone();
    if let Some(uid) = &d.uid {
        if *uid != c.uuid.to_string() {
            return Err(KubeError::conflict(&CLUSTERS, name));
        }
    }
    if let Some(rv) = d.resource_version {
        if rv != c.registry.resource_version {
            return Err(KubeError::conflict(&CLUSTERS, name));
        }
    }
    if c.registry.is_deleting() {
        let added = c.registry.added_finalizers(&d.meta.finalizers);
        if !added.is_empty() {
            return Err(KubeError::invalid(
                &CLUSTERS,
                &name,
                vec![Cause::forbidden(
                    "metadata.finalizers",
                    &format!(
                        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                        added
                            .iter()
                            .map(|f| crate::api::kube::status::quote(f))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )],
            ));
        }
    }
    let external = e.driver == EXTERNAL_DRIVER;
    let mut next = c.clone();
    let r = &mut next.registry;
    r.labels = d.meta.labels.clone();
    r.annotations = d.meta.annotations.clone();
    r.finalizers = d.meta.finalizers.clone();
    r.owner_references = d.meta.owner_references.clone();
    if r.deletion_waits() {
        next.status_reason = Some(r.waiting_reason());
    }
    let spec_changed = if external {
        let changed = r.server_endpoints != d.meta.server_endpoints
            || r.ca_bundle != d.meta.ca_bundle
            || r.auth_info != d.meta.auth_info;
        r.server_endpoints = d.meta.server_endpoints.clone();
        r.ca_bundle = d.meta.ca_bundle.clone();
        r.auth_info = d.meta.auth_info.clone();
        changed
    } else {
        // A provisioned cluster's endpoints and CA are what the service made; only the
        // credential pointers are the client's.
        let shown = view::cluster(e);
        let shown_eps = shown
            .spec
            .kubernetes_api_endpoints
            .map(|k| k.server_endpoints)
            .unwrap_or_default();
        let asked: Vec<_> = d
            .meta
            .server_endpoints
            .iter()
            .map(|s| objects::ServerAddressByClientCidr {
                client_cidr: s.client_cidr.clone(),
                server_address: s.server_address.clone(),
            })
            .collect();
        if asked != shown_eps || d.meta.ca_bundle != e.ca_pem {
            return Err(KubeError::invalid(
                &CLUSTERS,
                &name,
                vec![Cause::forbidden(
                    "spec.kubernetesApiEndpoints",
                    "the endpoints and CA of a cluster provisioned by this service are the service's own; only registered clusters take them from the registry",
                )],
            ));
        }
        let changed = r.auth_info != d.meta.auth_info;
        r.auth_info = d.meta.auth_info.clone();
        changed
    };
    if spec_changed {
        r.generation += 1;
    }
    if external {
        next.api_address = next.registry.api_address();
    }
    Ok((next.registry != c.registry || next.api_address != c.api_address).then_some(next))
}
