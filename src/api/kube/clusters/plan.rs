//! What a write will store, decided without I/O: the new registered cluster of a create, the
//! row an update leaves, and the managed fields both record.

use serde_json::Value;

use super::parse::Desired;
use crate::api::kube::managed::{self, Part};
use crate::api::kube::objects::API_VERSION;
use crate::api::kube::status::{Cause, KubeError, CLUSTERS};
use crate::api::kube::view;
use crate::api::RequestContext;
use crate::domain::cluster::{Cluster as Row, NewCluster};
use crate::domain::kube_names::DNS1123_SUBDOMAIN_MSG;
use crate::domain::managed_fields::{ManagedFields, ManagerId, Operation, Sent};
use crate::domain::names::ClusterName;
use crate::domain::registry::{RegistryMeta, ServerEndpoint, EXTERNAL_DRIVER, EXTERNAL_TEMPLATE};
use crate::domain::registry_change::{apply_update, Origin, RegistryUpdate, RegistryUpdateError};
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
/// create), from the entries the body `sent` if it carried any.
pub(super) fn record_create(
    ctx: &RequestContext,
    namespace: &str,
    d: &mut Desired,
    manager: &str,
    sent: Sent,
) -> Result<(), KubeError> {
    let shown = serde_json::to_value(view::cluster(&preview(&new_cluster(ctx, namespace, d)?)))
        .map_err(KubeError::internal)?;
    let m = ManagedFields::record_update(
        &ManagedFields::default(),
        sent,
        false,
        &managed::SCHEMA,
        &Value::Object(Default::default()),
        &managed::tracked(&managed::CLUSTER, &shown, Part::Main),
        &ManagerId::new(manager, Operation::Update, ""),
        API_VERSION,
        chrono::Utc::now(),
    );
    managed::check_entries(&managed::CLUSTER, &m, &d.name)?;
    d.meta.managed_fields = m;
    Ok(())
}

/// The row a write leaves with its managed fields: an apply's (already computed), or the
/// update's fields recorded for `id` on the entries the request `sent` (or the live ones);
/// `None` when neither the object nor its managers change.
pub(super) fn with_managed_fields(
    e: &RegistryEntry,
    current: &Value,
    next: Option<Row>,
    applied: Option<ManagedFields>,
    (id, sent): (&ManagerId, Sent),
) -> Result<Option<Row>, KubeError> {
    let changed = next.is_some();
    let mut row = next.unwrap_or_else(|| e.cluster.clone());
    match applied {
        Some(m) => row.registry.managed_fields = m,
        None => {
            let mut shown = e.clone();
            shown.cluster = row.clone();
            let new = serde_json::to_value(view::cluster(&shown)).map_err(KubeError::internal)?;
            let m = ManagedFields::record_update(
                &e.cluster.registry.managed_fields,
                sent,
                true,
                &managed::SCHEMA,
                &managed::tracked(&managed::CLUSTER, current, Part::Main),
                &managed::tracked(&managed::CLUSTER, &new, Part::Main),
                id,
                API_VERSION,
                chrono::Utc::now(),
            );
            managed::check_entries(&managed::CLUSTER, &m, &e.cluster.registry.name)?;
            row.registry.managed_fields = m;
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

/// Applies `d` to the stored cluster `e` ([`apply_update`]), its refusals in Kubernetes'
/// words: 409 for a stale uid or resourceVersion, 422 for finalizers added while deleting or
/// for the endpoints of a provisioned cluster.
pub(super) fn changed_row(e: &RegistryEntry, d: &Desired) -> Result<Option<Row>, KubeError> {
    let name = &e.cluster.registry.name;
    let shown: Vec<ServerEndpoint>;
    let origin = if e.driver == EXTERNAL_DRIVER {
        Origin::Registered
    } else {
        shown = view::cluster(e)
            .spec
            .kubernetes_api_endpoints
            .map(|k| k.server_endpoints)
            .unwrap_or_default()
            .into_iter()
            .map(|s| ServerEndpoint {
                client_cidr: s.client_cidr,
                server_address: s.server_address,
            })
            .collect();
        Origin::Provisioned {
            endpoints: &shown,
            ca_pem: e.ca_pem.as_deref(),
        }
    };
    let asked = RegistryUpdate {
        meta: &d.meta,
        uid: d.uid.as_deref(),
        resource_version: d.resource_version,
    };
    apply_update(&e.cluster, origin, asked).map_err(|err| match err {
        RegistryUpdateError::Conflict => KubeError::conflict(&CLUSTERS, name.clone()),
        RegistryUpdateError::FinalizersWhileDeleting(added) => KubeError::invalid(
            &CLUSTERS,
            name,
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
        ),
        RegistryUpdateError::ProvisionedEndpoints => KubeError::invalid(
            &CLUSTERS,
            name,
            vec![Cause::forbidden(
                "spec.kubernetesApiEndpoints",
                "the endpoints and CA of a cluster provisioned by this service are the service's own; only registered clusters take them from the registry",
            )],
        ),
    })
}
