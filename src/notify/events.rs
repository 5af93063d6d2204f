//! Builds the inner oslo.messaging message (`message_id`, `publisher_id`, `event_type`,
//! `priority`, `payload`, `timestamp`, `_context_*`) with a CADF payload, as Magnum sends it.
//! The request's token never appears in it.

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use crate::domain::leftover::Leftover;
use crate::domain::ClusterId;
use crate::store::NewEvent;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Create,
    Update,
    Delete,
}

impl Action {
    pub fn as_str(&self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pending,
    Success,
    Failure,
}

impl Outcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Pending => "pending",
            Outcome::Success => "success",
            Outcome::Failure => "failure",
        }
    }
    /// oslo priority: ERROR for failures, else INFO.
    pub fn priority(&self) -> &'static str {
        match self {
            Outcome::Failure => "ERROR",
            _ => "INFO",
        }
    }
}

/// Who caused the event; `None` for the conductor's own periodic work.
#[derive(Debug, Clone, Default)]
pub struct Initiator {
    pub user_id: Option<String>,
    pub project_id: Option<String>,
    pub domain_id: Option<String>,
    pub roles: Vec<String>,
    pub is_admin: bool,
    pub request_id: Option<String>,
}

/// What the event is about.
pub struct Target<'a> {
    /// `cluster`, `cluster_template`, `nodegroup`, `federation`.
    pub resource_type: &'a str,
    pub uuid: String,
    pub name: String,
    /// The `<resource>_data` attachment content.
    pub content: Value,
}

/// oslo's timestamp: `str()` of a naive UTC datetime.
pub fn oslo_timestamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S%.6f").to_string()
}

/// Attachment timestamps: `YYYY-MM-DDTHH:MM:SS.ffffff`, no offset.
pub fn attachment_timestamp(t: Option<DateTime<Utc>>) -> Value {
    match t {
        Some(t) => Value::String(t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()),
        None => Value::Null,
    }
}

/// Builds one outbox event for `magnum.<resource_type>.<action>`.
pub fn build(
    host: &str,
    action: Action,
    outcome: Outcome,
    target: Target<'_>,
    initiator: Option<&Initiator>,
) -> NewEvent {
    let now = Utc::now();
    let message_id = Uuid::new_v4();
    let event_type = format!("magnum.{}.{}", target.resource_type, action.as_str());
    let type_uri = format!("service/magnum/{}", target.resource_type);
    let mut init = Map::new();
    init.insert("typeURI".into(), json!("service/security/account/user"));
    init.insert("id".into(), json!(Uuid::new_v4().to_string()));
    if let Some(i) = initiator {
        for (k, v) in [
            ("user_id", &i.user_id),
            ("project_id", &i.project_id),
            ("domain_id", &i.domain_id),
        ] {
            if let Some(v) = v {
                init.insert(k.into(), json!(v));
            }
        }
    }
    let payload = json!({
        "typeURI": "http://schemas.dmtf.org/cloud/audit/1.0/event",
        "id": Uuid::new_v4().to_string(),
        "eventType": "activity",
        "eventTime": now.format("%Y-%m-%dT%H:%M:%S%.6f+0000").to_string(),
        "action": action.as_str(),
        "outcome": outcome.as_str(),
        "initiator": Value::Object(init),
        "target": {
            "typeURI": type_uri,
            "id": target.uuid,
            "name": target.name,
            "attachments": [{
                "typeURI": type_uri,
                "name": format!("{}_data", target.resource_type),
                "content": target.content,
            }],
        },
        "observer": {"typeURI": type_uri, "id": Uuid::new_v4().to_string()},
    });
    let mut message = Map::new();
    message.insert("message_id".into(), json!(message_id.to_string()));
    message.insert(
        "publisher_id".into(),
        json!(format!("container-infra.{host}")),
    );
    message.insert("event_type".into(), json!(event_type));
    message.insert("priority".into(), json!(outcome.priority()));
    message.insert("payload".into(), payload);
    message.insert("timestamp".into(), json!(oslo_timestamp(now)));
    if let Some(i) = initiator {
        message.insert("_context_user_id".into(), json!(i.user_id));
        message.insert("_context_user".into(), json!(i.user_id));
        message.insert("_context_project_id".into(), json!(i.project_id));
        message.insert("_context_domain_id".into(), json!(i.domain_id));
        message.insert("_context_roles".into(), json!(i.roles));
        message.insert("_context_is_admin".into(), json!(i.is_admin));
        message.insert("_context_request_id".into(), json!(i.request_id));
        message.insert("_context_auth_token".into(), Value::Null);
    }
    NewEvent {
        message_id,
        resource_type: target.resource_type.to_string(),
        resource_uuid: target.uuid,
        event_type,
        priority: outcome.priority().to_string(),
        message: Value::Object(message),
    }
}

/// The `cluster_data` attachment, with Magnum's field names, including its `docker_volume_size:`
/// key (trailing colon and all), so existing consumers parse it.
pub fn cluster_content(
    c: &crate::domain::cluster::Cluster,
    ngs: &[crate::domain::cluster::NodeGroup],
) -> Value {
    let (masters, workers): (Vec<_>, Vec<_>) = ngs.iter().partition(|n| n.is_master());
    let count = |v: &[&crate::domain::cluster::NodeGroup]| {
        v.iter()
            .fold(0i32, |sum, n| sum.saturating_add(n.node_count))
    };
    let addresses = |v: &[&crate::domain::cluster::NodeGroup]| {
        v.iter()
            .flat_map(|n| n.node_addresses.iter().cloned())
            .collect::<Vec<_>>()
    };
    json!({
        "status": c.status.as_str(),
        "status_reason": c.status_reason,
        "name": c.name,
        "project_id": c.project_id,
        "user_id": c.user_id,
        "created_at": attachment_timestamp(Some(c.created_at)),
        "updated_at": attachment_timestamp(c.updated_at),
        "cluster_template_id": c.cluster_template_id.to_string(),
        "keypair": c.keypair,
        "docker_volume_size:": c.docker_volume_size,
        "labels": c.labels,
        "master_flavor_id": c.master_flavor_id,
        "flavor_id": c.flavor_id,
        "stack_id": c.stack_id,
        "health_status": c.health_status.map(|h| h.as_str()),
        "create_timeout": c.create_timeout,
        "api_address": c.api_address,
        "discovery_url": c.discovery_url,
        "node_addresses": addresses(&workers),
        "master_addresses": addresses(&masters),
        "node_count": count(&workers),
        "master_count": count(&masters),
    })
}

/// The `federation_data` attachment; `member_change` names the clusters a join or unjoin moved.
pub fn federation_content(
    f: &crate::domain::federation::Federation,
    change: Option<(&[ClusterId], &[ClusterId])>,
) -> Value {
    let mut v = json!({
        "status": f.status.as_str(),
        "status_reason": f.status_reason,
        "name": f.name,
        "project_id": f.project_id,
        "user_id": f.user_id,
        "hostcluster_id": f.hostcluster_id,
        "member_ids": f.member_ids,
        "properties": f.properties,
        "created_at": attachment_timestamp(Some(f.created_at)),
        "updated_at": attachment_timestamp(f.updated_at),
    });
    if let Some((joined, unjoined)) = change {
        v["member_change"] = json!({"joined": joined, "unjoined": unjoined});
    }
    v
}

/// The `nodegroup_data` attachment.
pub fn nodegroup_content(n: &crate::domain::cluster::NodeGroup) -> Value {
    json!({
        "status": n.status.as_str(),
        "status_reason": n.status_reason,
        "name": n.name,
        "cluster_id": n.cluster_id.to_string(),
        "project_id": n.project_id,
        "role": n.role,
        "node_count": n.node_count,
        "min_node_count": n.min_node_count,
        "max_node_count": n.max_node_count,
        "flavor_id": n.flavor_id,
        "image_id": n.image_id,
        "labels": n.labels,
        "node_labels": n.node_labels,
        "node_taints": n.node_taints,
        "is_default": n.is_default,
        "created_at": attachment_timestamp(Some(n.created_at)),
        "updated_at": attachment_timestamp(n.updated_at),
    })
}

/// A cluster event.
pub fn cluster_event(
    host: &str,
    action: Action,
    outcome: Outcome,
    c: &crate::domain::cluster::Cluster,
    ngs: &[crate::domain::cluster::NodeGroup],
    initiator: Option<&Initiator>,
) -> NewEvent {
    build(
        host,
        action,
        outcome,
        Target {
            resource_type: "cluster",
            uuid: c.uuid.to_string(),
            name: c.name.clone(),
            content: cluster_content(c, ngs),
        },
        initiator,
    )
}

/// The `leftovers` attachment: what a delete left behind, by kind and id.
fn leftovers_attachment(resource_type: &str, leftovers: &[Leftover]) -> Value {
    json!({
        "typeURI": format!("service/magnum/{resource_type}/leftovers"),
        "name": "leftovers",
        "content": leftovers,
    })
}

/// Adds the `leftovers` attachment to an event's CADF target.
fn attach_leftovers(e: &mut NewEvent, leftovers: &[Leftover]) {
    let attachment = leftovers_attachment(&e.resource_type, leftovers);
    if let Some(list) = e.message["payload"]["target"]["attachments"].as_array_mut() {
        list.push(attachment);
    }
}

/// The failure event of a cluster delete that could not finish: the cluster as stored
/// (`DELETE_FAILED`, its reason naming the leftovers) and a `leftovers` attachment listing
/// every object left behind.
pub fn cluster_delete_failed_event(
    host: &str,
    c: &crate::domain::cluster::Cluster,
    ngs: &[crate::domain::cluster::NodeGroup],
    leftovers: &[Leftover],
) -> NewEvent {
    let mut e = cluster_event(host, Action::Delete, Outcome::Failure, c, ngs, None);
    attach_leftovers(&mut e, leftovers);
    e
}

/// The failure event of a node group delete that could not finish: the group as stored
/// (`DELETE_FAILED`, its reason naming the leftovers) and a `leftovers` attachment.
pub fn nodegroup_delete_failed_event(
    host: &str,
    n: &crate::domain::cluster::NodeGroup,
    leftovers: &[Leftover],
) -> NewEvent {
    let mut e = nodegroup_event(host, Action::Delete, Outcome::Failure, n, None);
    attach_leftovers(&mut e, leftovers);
    e
}

/// The audit notification of a forced delete, `magnum.cluster.force_delete`: the record went
/// after one last best-effort clean-up; `c` is the cluster as it was removed (its reason says
/// what the clean-up answered), the `leftovers` attachment lists what the infrastructure may
/// still hold. WARN when something was left behind, INFO otherwise; the initiator is the
/// administrator who forced it.
pub fn cluster_forced_delete_event(
    host: &str,
    c: &crate::domain::cluster::Cluster,
    ngs: &[crate::domain::cluster::NodeGroup],
    leftovers: &[Leftover],
    initiator: Option<&Initiator>,
) -> NewEvent {
    let mut e = build(
        host,
        Action::Delete,
        Outcome::Success,
        Target {
            resource_type: "cluster",
            uuid: c.uuid.to_string(),
            name: c.name.clone(),
            content: cluster_content(c, ngs),
        },
        initiator,
    );
    audit_forced(&mut e, FORCED_DELETE, leftovers);
    e
}

/// The event type of a forced delete's audit notification.
pub const FORCED_DELETE: &str = "magnum.cluster.force_delete";

/// The audit notification of a node group's forced delete, `magnum.nodegroup.force_delete`:
/// as a cluster's, with the node group as it was removed in its `nodegroup_data` attachment.
pub fn nodegroup_forced_delete_event(
    host: &str,
    n: &crate::domain::cluster::NodeGroup,
    leftovers: &[Leftover],
    initiator: Option<&Initiator>,
) -> NewEvent {
    let mut e = nodegroup_event(host, Action::Delete, Outcome::Success, n, initiator);
    audit_forced(&mut e, NODEGROUP_FORCED_DELETE, leftovers);
    e
}

/// The event type of a node group's forced delete audit notification.
pub const NODEGROUP_FORCED_DELETE: &str = "magnum.nodegroup.force_delete";

/// The audit notification of a federation's forced delete, `magnum.federation.force_delete`:
/// as a cluster's, with the federation as it was removed in its `federation_data` attachment.
pub fn federation_forced_delete_event(
    host: &str,
    f: &crate::domain::federation::Federation,
    leftovers: &[Leftover],
    initiator: Option<&Initiator>,
) -> NewEvent {
    let mut e = federation_event(host, Action::Delete, Outcome::Success, f, None, initiator);
    audit_forced(&mut e, FEDERATION_FORCED_DELETE, leftovers);
    e
}

/// The event type of a federation's forced delete audit notification.
pub const FEDERATION_FORCED_DELETE: &str = "magnum.federation.force_delete";

/// Makes `e` a forced delete's audit notification: its event type, WARN when something was
/// left behind, and the `leftovers` attachment.
fn audit_forced(e: &mut NewEvent, event_type: &str, leftovers: &[Leftover]) {
    e.event_type = event_type.to_string();
    e.message["event_type"] = json!(event_type);
    if !leftovers.is_empty() {
        e.priority = "WARN".into();
        e.message["priority"] = json!("WARN");
    }
    attach_leftovers(e, leftovers);
}

/// A federation event; `change` is the member change of a join or unjoin.
pub fn federation_event(
    host: &str,
    action: Action,
    outcome: Outcome,
    f: &crate::domain::federation::Federation,
    change: Option<(&[ClusterId], &[ClusterId])>,
    initiator: Option<&Initiator>,
) -> NewEvent {
    build(
        host,
        action,
        outcome,
        Target {
            resource_type: "federation",
            uuid: f.uuid.to_string(),
            name: f.name.clone(),
            content: federation_content(f, change),
        },
        initiator,
    )
}

/// A node group event.
pub fn nodegroup_event(
    host: &str,
    action: Action,
    outcome: Outcome,
    n: &crate::domain::cluster::NodeGroup,
    initiator: Option<&Initiator>,
) -> NewEvent {
    build(
        host,
        action,
        outcome,
        Target {
            resource_type: "nodegroup",
            uuid: n.uuid.to_string(),
            name: n.name.clone(),
            content: nodegroup_content(n),
        },
        initiator,
    )
}

/// The `machine_data` attachment: the machine's identity, spec and last reported status.
pub fn machine_content(m: &crate::domain::machine::Machine) -> Value {
    json!({
        "name": m.name.as_str(),
        "cluster_id": m.cluster_id.to_string(),
        "nodegroup_id": m.nodegroup_id.to_string(),
        "project_id": m.project_id,
        "role": m.role.as_str(),
        "phase": m.status.phase.as_str(),
        "provider_id": m.status.provider_id,
        "node_ref": m.status.node_ref,
        "spec": m.spec,
        "versions": m.status.versions,
        "created_at": attachment_timestamp(Some(m.created_at)),
        "updated_at": attachment_timestamp(m.updated_at),
    })
}

/// A machine event (`magnum.machine.<action>`).
pub fn machine_event(
    host: &str,
    action: Action,
    outcome: Outcome,
    m: &crate::domain::machine::Machine,
    initiator: Option<&Initiator>,
) -> NewEvent {
    build(
        host,
        action,
        outcome,
        Target {
            resource_type: "machine",
            uuid: m.uuid.to_string(),
            name: m.name.to_string(),
            content: machine_content(m),
        },
        initiator,
    )
}

// ---- Cluster groups and their bindings ----------------------------------------------------

/// The `clustergroup_data` attachment: the group as its project wrote it.
pub fn cluster_group_content(g: &crate::domain::cluster_group::ClusterGroup) -> Value {
    json!({
        "name": g.name.as_str(),
        "description": g.description.as_ref().map(|d| d.as_str()),
        "selector": g.selector.as_ref().map(|s| s.as_str()),
        "project_id": g.project_id,
        "user_id": g.user_id,
        "created_at": attachment_timestamp(Some(g.created_at)),
        "updated_at": attachment_timestamp(g.updated_at),
    })
}

/// A cluster group event (`magnum.clustergroup.<action>`).
pub fn cluster_group_event(
    host: &str,
    action: Action,
    outcome: Outcome,
    g: &crate::domain::cluster_group::ClusterGroup,
    initiator: Option<&Initiator>,
) -> NewEvent {
    build(
        host,
        action,
        outcome,
        Target {
            resource_type: "clustergroup",
            uuid: g.uuid.to_string(),
            name: g.name.as_str().to_string(),
            content: cluster_group_content(g),
        },
        initiator,
    )
}

/// The `clustergroupbinding_data` attachment: the group, the grantee and what it gets.
pub fn cluster_group_binding_content(
    b: &crate::domain::cluster_group::ClusterGroupBinding,
) -> Value {
    json!({
        "clustergroup_id": b.group.to_string(),
        "project_id": b.project_id,
        "grantee_project_id": b.grantee_project_id,
        "roles": b.roles,
        "access": b.right.as_str(),
        "created_at": attachment_timestamp(Some(b.created_at)),
    })
}

/// A cluster group binding event (`magnum.clustergroupbinding.<action>`); its name is the
/// grantee project.
pub fn cluster_group_binding_event(
    host: &str,
    action: Action,
    outcome: Outcome,
    b: &crate::domain::cluster_group::ClusterGroupBinding,
    initiator: Option<&Initiator>,
) -> NewEvent {
    build(
        host,
        action,
        outcome,
        Target {
            resource_type: "clustergroupbinding",
            uuid: b.uuid.to_string(),
            name: b.grantee_project_id.clone(),
            content: cluster_group_binding_content(b),
        },
        initiator,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn initiator() -> Initiator {
        Initiator {
            user_id: Some("u1".into()),
            project_id: Some("p1".into()),
            roles: vec!["member".into()],
            request_id: Some("req-1".into()),
            ..Initiator::default()
        }
    }

    #[test]
    fn group_and_binding_events_name_their_resource_and_carry_its_data() {
        use crate::domain::cluster_group::{
            ClusterGroup, ClusterGroupBinding, GroupName, GroupRight, GroupSelector,
        };
        use crate::domain::{ClusterGroupBindingId, ClusterGroupId};
        let g = ClusterGroup {
            id: 1,
            uuid: ClusterGroupId::new(),
            project_id: "p1".into(),
            user_id: "u1".into(),
            name: GroupName::parse("prod").expect("name"),
            description: None,
            selector: Some(GroupSelector::parse("env=prod").expect("selector")),
            version: 0,
            resource_version: 0,
            created_at: Utc::now(),
            updated_at: None,
        };
        let e = cluster_group_event("h", Action::Create, Outcome::Success, &g, None);
        assert_eq!(e.event_type, "magnum.clustergroup.create");
        assert_eq!(e.resource_uuid, g.uuid.to_string());
        let content = &e.message["payload"]["target"]["attachments"][0];
        assert_eq!(content["name"], "clustergroup_data");
        assert_eq!(content["content"]["selector"], "env=prod");
        let b = ClusterGroupBinding {
            id: 1,
            uuid: ClusterGroupBindingId::new(),
            group: g.uuid,
            project_id: "p1".into(),
            grantee_project_id: "p2".into(),
            roles: Some(vec!["reader".into()]),
            right: GroupRight::Write,
            resource_version: 0,
            created_at: Utc::now(),
        };
        let e = cluster_group_binding_event("h", Action::Delete, Outcome::Success, &b, None);
        assert_eq!(e.event_type, "magnum.clustergroupbinding.delete");
        let target = &e.message["payload"]["target"];
        assert_eq!(target["name"], "p2");
        let content = &target["attachments"][0]["content"];
        assert_eq!(content["access"], "write");
        assert_eq!(content["roles"], json!(["reader"]));
        assert_eq!(content["clustergroup_id"], g.uuid.to_string());
    }

    #[test]
    fn the_inner_message_has_olsos_fields_and_a_cadf_payload() {
        let e = build(
            "node-1",
            Action::Create,
            Outcome::Pending,
            Target {
                resource_type: "cluster",
                uuid: "c-1".into(),
                name: "k8s".into(),
                content: json!({"status": "CREATE_IN_PROGRESS"}),
            },
            Some(&initiator()),
        );
        let m = &e.message;
        assert_eq!(m["event_type"], "magnum.cluster.create");
        assert_eq!(m["publisher_id"], "container-infra.node-1");
        assert_eq!(m["priority"], "INFO");
        assert_eq!(m["message_id"], e.message_id.to_string());
        let ts = m["timestamp"].as_str().expect("timestamp");
        assert!(
            chrono::NaiveDateTime::parse_from_str(ts, "%Y-%m-%d %H:%M:%S%.6f").is_ok(),
            "{ts}"
        );
        let p = &m["payload"];
        assert_eq!(
            p["typeURI"],
            "http://schemas.dmtf.org/cloud/audit/1.0/event"
        );
        assert_eq!(p["outcome"], "pending");
        assert_eq!(p["initiator"]["user_id"], "u1");
        assert_ne!(p["initiator"]["id"], "u1");
        assert_eq!(p["target"]["attachments"][0]["name"], "cluster_data");
        assert_eq!(
            p["target"]["attachments"][0]["content"]["status"],
            "CREATE_IN_PROGRESS"
        );
        assert!(p["eventTime"].as_str().expect("time").ends_with("+0000"));
    }

    fn cluster() -> crate::domain::cluster::Cluster {
        crate::domain::cluster::Cluster {
            id: 1,
            uuid: ClusterId::new(),
            project_id: "p1".into(),
            user_id: "u1".into(),
            name: "k1".into(),
            cluster_template_id: crate::domain::TemplateId::new(),
            keypair: None,
            docker_volume_size: None,
            labels: Default::default(),
            master_flavor_id: None,
            flavor_id: None,
            stack_id: None,
            api_address: None,
            status: crate::domain::status::ClusterStatus::DeleteFailed,
            status_reason: None,
            health_status: None,
            health_status_reason: Default::default(),
            create_timeout: Some(60),
            discovery_url: None,
            coe_version: None,
            container_version: None,
            fixed_network: None,
            fixed_subnet: None,
            floating_ip_enabled: false,
            master_lb_enabled: false,
            version: 1,
            created_at: Utc::now(),
            updated_at: None,
            registry: Default::default(),
        }
    }

    #[test]
    fn a_failed_delete_and_a_forced_one_list_their_leftovers() {
        let c = cluster();
        let left = vec![
            Leftover::new("server", "s-1"),
            Leftover::new("network", "n-1"),
        ];
        let failed = cluster_delete_failed_event("h", &c, &[], &left);
        let p = &failed.message["payload"];
        assert_eq!(failed.event_type, "magnum.cluster.delete");
        assert_eq!(p["outcome"], "failure");
        assert_eq!(p["target"]["attachments"][1]["name"], "leftovers");
        assert_eq!(
            p["target"]["attachments"][1]["content"],
            json!([{"kind": "server", "id": "s-1"}, {"kind": "network", "id": "n-1"}])
        );

        let forced = cluster_forced_delete_event("h", &c, &[], &left, Some(&initiator()));
        assert_eq!(forced.event_type, "magnum.cluster.force_delete");
        assert_eq!(forced.message["event_type"], "magnum.cluster.force_delete");
        assert_eq!(forced.priority, "WARN");
        assert_eq!(forced.message["priority"], "WARN");
        assert_eq!(forced.message["payload"]["action"], "delete");
        assert_eq!(forced.message["payload"]["initiator"]["user_id"], "u1");
        assert_eq!(
            forced.message["payload"]["target"]["attachments"][1]["content"][0]["id"],
            "s-1"
        );
        let clean = cluster_forced_delete_event("h", &c, &[], &[], None);
        assert_eq!(clean.priority, "INFO");
        assert_eq!(
            clean.message["payload"]["target"]["attachments"][1]["content"],
            json!([])
        );
    }

    #[test]
    fn failures_are_error_priority_and_no_token_is_carried() {
        let e = build(
            "h",
            Action::Delete,
            Outcome::Failure,
            Target {
                resource_type: "cluster",
                uuid: "c".into(),
                name: "n".into(),
                content: json!({}),
            },
            Some(&initiator()),
        );
        assert_eq!(e.priority, "ERROR");
        assert_eq!(e.message["_context_auth_token"], Value::Null);
        assert!(!e.message.to_string().contains("token\":\""));
    }
}
