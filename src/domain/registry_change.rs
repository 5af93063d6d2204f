//! What a registry update (replace, patch or apply of a `Cluster`) may change on a stored
//! cluster: its uid and resourceVersion, when stated, must be the stored ones; no finalizer
//! may be added once its deletion is asked for; a registered cluster takes its endpoints, CA
//! and credential pointers from the registry, a provisioned one only its credential pointers
//! (its endpoints and CA are the service's); a change of the registry spec bumps the
//! generation.

use super::cluster::Cluster;
use super::registry::{RegistryMeta, ServerEndpoint};

/// What an update asks for: the registry part it leaves, and its preconditions.
#[derive(Debug, Clone, Copy)]
pub struct RegistryUpdate<'a> {
    pub meta: &'a RegistryMeta,
    /// `metadata.uid`, when the object states one.
    pub uid: Option<&'a str>,
    /// `metadata.resourceVersion`, when the object states one.
    pub resource_version: Option<i64>,
}

/// Who made the cluster.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// Registered through the registry (driver `external`): the registry is its source.
    Registered,
    /// Provisioned by the service, with the endpoints and CA the registry shows for it.
    Provisioned {
        endpoints: &'a [ServerEndpoint],
        ca_pem: Option<&'a str>,
    },
}

/// Why an update may not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryUpdateError {
    /// The stated uid or resourceVersion is not the stored one.
    Conflict,
    /// Finalizers added to a cluster being deleted (these).
    FinalizersWhileDeleting(Vec<String>),
    /// Endpoints or CA of a provisioned cluster asked to change.
    ProvisionedEndpoints,
}

/// The row `asked` leaves of `current`, or `None` when it changes nothing.
pub fn apply_update(
    current: &Cluster,
    origin: Origin<'_>,
    asked: RegistryUpdate<'_>,
) -> Result<Option<Cluster>, RegistryUpdateError> {
    let c = current;
    let d = asked.meta;
    if asked.uid.is_some_and(|uid| uid != c.uuid.to_string()) {
        return Err(RegistryUpdateError::Conflict);
    }
    if asked
        .resource_version
        .is_some_and(|rv| rv != c.registry.resource_version)
    {
        return Err(RegistryUpdateError::Conflict);
    }
    if c.registry.is_deleting() {
        let added = c.registry.added_finalizers(&d.finalizers);
        if !added.is_empty() {
            return Err(RegistryUpdateError::FinalizersWhileDeleting(
                added.into_iter().map(str::to_string).collect(),
            ));
        }
    }
    let mut next = c.clone();
    let r = &mut next.registry;
    r.labels = d.labels.clone();
    r.annotations = d.annotations.clone();
    r.finalizers = d.finalizers.clone();
    r.owner_references = d.owner_references.clone();
    if r.deletion_waits() {
        next.status_reason = Some(r.waiting_reason());
    }
    let spec_changed = match origin {
        Origin::Registered => {
            let changed = r.server_endpoints != d.server_endpoints
                || r.ca_bundle != d.ca_bundle
                || r.auth_info != d.auth_info;
            r.server_endpoints = d.server_endpoints.clone();
            r.ca_bundle = d.ca_bundle.clone();
            r.auth_info = d.auth_info.clone();
            changed
        }
        Origin::Provisioned { endpoints, ca_pem } => {
            if d.server_endpoints.as_slice() != endpoints || d.ca_bundle.as_deref() != ca_pem {
                return Err(RegistryUpdateError::ProvisionedEndpoints);
            }
            let changed = r.auth_info != d.auth_info;
            r.auth_info = d.auth_info.clone();
            changed
        }
    };
    if spec_changed {
        r.generation += 1;
    }
    if matches!(origin, Origin::Registered) {
        next.api_address = next.registry.api_address();
    }
    Ok((next.registry != c.registry || next.api_address != c.api_address).then_some(next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::cluster::NewCluster;
    use crate::domain::names::ClusterName;
    use crate::domain::registry::{AuthPointers, ObjectRef, EXTERNAL_TEMPLATE};
    use crate::domain::status::ClusterStatus;
    use crate::domain::ClusterId;

    fn endpoint(addr: &str) -> ServerEndpoint {
        ServerEndpoint {
            client_cidr: "0.0.0.0/0".into(),
            server_address: addr.into(),
        }
    }

    /// A stored cluster at resourceVersion 7, generation 1, reached at 10.0.0.1:6443.
    fn stored() -> Cluster {
        let mut c = NewCluster {
            uuid: ClusterId::new(),
            project_id: "p".into(),
            user_id: "u".into(),
            name: ClusterName::registered("c1").unwrap_or_else(|| unreachable!()),
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
                name: "c1".into(),
                server_endpoints: vec![endpoint("10.0.0.1:6443")],
                ..RegistryMeta::default()
            },
            derive_registry_name: false,
        }
        .provisional(chrono::Utc::now());
        c.registry.resource_version = 7;
        c
    }

    fn ask(meta: &RegistryMeta) -> RegistryUpdate<'_> {
        RegistryUpdate {
            meta,
            uid: None,
            resource_version: None,
        }
    }

    fn user(name: &str) -> AuthPointers {
        AuthPointers {
            user: Some(ObjectRef {
                kind: "Secret".into(),
                name: name.into(),
                namespace: String::new(),
            }),
            controller: None,
        }
    }

    #[test]
    fn a_stale_uid_or_resource_version_is_a_conflict() {
        let c = stored();
        let meta = c.registry.clone();
        let uid = c.uuid.to_string();
        let stale = RegistryUpdate {
            uid: Some("other"),
            ..ask(&meta)
        };
        assert_eq!(
            apply_update(&c, Origin::Registered, stale),
            Err(RegistryUpdateError::Conflict)
        );
        let stale = RegistryUpdate {
            resource_version: Some(6),
            ..ask(&meta)
        };
        assert_eq!(
            apply_update(&c, Origin::Registered, stale),
            Err(RegistryUpdateError::Conflict)
        );
        let current = RegistryUpdate {
            uid: Some(&uid),
            resource_version: Some(7),
            ..ask(&meta)
        };
        assert_eq!(apply_update(&c, Origin::Registered, current), Ok(None));
    }

    #[test]
    fn metadata_changes_keep_the_generation_and_spec_changes_bump_it() {
        let c = stored();
        let mut meta = c.registry.clone();
        meta.labels.insert("env".into(), "prod".into());
        let next = apply_update(&c, Origin::Registered, ask(&meta));
        let next = next.ok().flatten();
        assert_eq!(
            next.as_ref()
                .map(|n| (n.registry.labels.len(), n.registry.generation)),
            Some((1, 1))
        );
        meta.server_endpoints = vec![endpoint("https://10.0.0.2:6443")];
        let next = apply_update(&c, Origin::Registered, ask(&meta))
            .ok()
            .flatten();
        assert_eq!(next.as_ref().map(|n| n.registry.generation), Some(2));
        assert_eq!(
            next.and_then(|n| n.api_address),
            Some("https://10.0.0.2:6443".to_string())
        );
    }

    #[test]
    fn no_finalizer_may_be_added_while_deleting_and_a_waiting_deletion_says_why() {
        let mut c = stored();
        c.registry.finalizers = vec!["example.com/a".into()];
        c.registry.mark_deleting(chrono::Utc::now());
        let mut meta = c.registry.clone();
        meta.finalizers.push("example.com/b".into());
        assert_eq!(
            apply_update(&c, Origin::Registered, ask(&meta)),
            Err(RegistryUpdateError::FinalizersWhileDeleting(vec![
                "example.com/b".into()
            ]))
        );
        let mut meta = c.registry.clone();
        meta.labels.insert("x".into(), "y".into());
        let next = apply_update(&c, Origin::Registered, ask(&meta))
            .ok()
            .flatten();
        assert_eq!(
            next.and_then(|n| n.status_reason),
            Some("Deletion waits for the registry finalizers to be removed: example.com/a".into())
        );
    }

    #[test]
    fn a_provisioned_cluster_keeps_its_endpoints_and_takes_only_credential_pointers() {
        let c = stored();
        let shown = [endpoint("10.9.9.9:6443")];
        let origin = Origin::Provisioned {
            endpoints: &shown,
            ca_pem: None,
        };
        let mut meta = c.registry.clone();
        assert_eq!(
            apply_update(&c, origin, ask(&meta)),
            Err(RegistryUpdateError::ProvisionedEndpoints)
        );
        meta.server_endpoints = shown.to_vec();
        meta.ca_bundle = Some("PEM".into());
        assert_eq!(
            apply_update(&c, origin, ask(&meta)),
            Err(RegistryUpdateError::ProvisionedEndpoints)
        );
        meta.ca_bundle = None;
        meta.auth_info = user("creds");
        let next = apply_update(&c, origin, ask(&meta)).ok().flatten();
        let Some(next) = next else {
            panic!("the pointers change");
        };
        assert_eq!(next.registry.auth_info, user("creds"));
        assert_eq!(next.registry.generation, 2);
        // The stored endpoints and address are not the registry's to change.
        assert_eq!(next.registry.server_endpoints, c.registry.server_endpoints);
        assert_eq!(next.api_address, c.api_address);
    }
}
