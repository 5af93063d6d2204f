//! Durable driver work. The API writes a job with the change it belongs to; a conductor claims
//! it under a lease, calls the driver and moves the resource's status on.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::machine::ChangeMode;
use super::{ClusterId, FederationId, Id, JobId, MachineId, NodeGroupId, TemplateId};

pub mod retry;

pub use retry::{Failure, NextStep};

macro_rules! operations {
    ($($variant:ident = $text:literal),+ $(,)?) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Operation { $($variant),+ }
        impl Operation {
            pub const ALL: &'static [Operation] = &[$(Operation::$variant),+];
            pub fn as_str(&self) -> &'static str {
                match self { $(Operation::$variant => $text),+ }
            }
            pub fn parse(text: &str) -> Option<Operation> {
                match text { $($text => Some(Operation::$variant),)+ _ => None }
            }
        }
    };
}

operations! {
    ClusterCreate = "cluster.create",
    ClusterUpdate = "cluster.update",
    ClusterResize = "cluster.resize",
    ClusterUpgrade = "cluster.upgrade",
    ClusterDelete = "cluster.delete",
    NodegroupCreate = "nodegroup.create",
    NodegroupUpdate = "nodegroup.update",
    NodegroupDelete = "nodegroup.delete",
    NodegroupRoll = "nodegroup.roll",
    FederationCreate = "federation.create",
    FederationUpdate = "federation.update",
    FederationDelete = "federation.delete",
    CaRotate = "cluster.rotate_ca",
    CredentialRotate = "cluster.rotate_credential",
    // One machine's operations (their job's resource is the machine's cluster).
    MachineUpdate = "machine.update",
    MachineReplace = "machine.replace",
    MachineReboot = "machine.reboot",
}

impl Operation {
    /// The kind of resource the job works on.
    pub fn resource_type(&self) -> &'static str {
        let text = self.as_str();
        text.split('.').next().unwrap_or(text)
    }
}

/// What a job works on: a cluster (its node groups' jobs too, so one cluster's jobs run in
/// order) or a federation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobResource {
    Cluster(ClusterId),
    Federation(FederationId),
}

impl JobResource {
    /// The resource a stored job names: federation operations name a federation, every other
    /// operation a cluster.
    pub fn of(operation: Operation, uuid: uuid::Uuid) -> JobResource {
        match operation {
            Operation::FederationCreate
            | Operation::FederationUpdate
            | Operation::FederationDelete => JobResource::Federation(FederationId(uuid)),
            _ => JobResource::Cluster(ClusterId(uuid)),
        }
    }
    pub fn uuid(&self) -> uuid::Uuid {
        match self {
            JobResource::Cluster(id) => id.uuid(),
            JobResource::Federation(id) => id.uuid(),
        }
    }
}

impl From<ClusterId> for JobResource {
    fn from(id: ClusterId) -> Self {
        JobResource::Cluster(id)
    }
}

impl From<FederationId> for JobResource {
    fn from(id: FederationId) -> Self {
        JobResource::Federation(id)
    }
}

impl std::fmt::Display for JobResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.uuid().hyphenated(), f)
    }
}

/// What a job is asked to do: its operation and the operation's arguments, the one contract
/// between the API (which writes it) and the conductor (which matches on it).
///
/// Serde tags it by operation (`{"operation": "cluster.resize", "arguments": {...}}`); a job
/// row keeps the tag in its `operation` column and the arguments in its `payload` column, so
/// [`JobPayload::stored`] and [`JobPayload::from_stored`] split and join the two. The arguments
/// are the JSON objects earlier releases wrote by hand, field for field, so jobs queued before
/// an upgrade are read by the new conductor (`tests/integration/conductor.rs` inserts rows in
/// that format on both backends).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "operation", content = "arguments")]
pub enum JobPayload {
    #[serde(rename = "cluster.create")]
    ClusterCreate {},
    /// A worker node count set through `PATCH /v1/clusters/{id}` (`/node_count`).
    #[serde(rename = "cluster.update")]
    ClusterUpdate {
        nodegroup: NodeGroupId,
        old_node_count: i32,
        node_count: i32,
        #[serde(default)]
        rollback: bool,
    },
    #[serde(rename = "cluster.resize")]
    ClusterResize {
        nodegroup: NodeGroupId,
        old_node_count: i32,
        node_count: i32,
        #[serde(default)]
        nodes_to_remove: Vec<String>,
    },
    #[serde(rename = "cluster.upgrade")]
    ClusterUpgrade {
        /// Put back when the upgrade fails for good.
        old_template: TemplateId,
        template: TemplateId,
        #[serde(default = "one")]
        max_batch_size: i32,
        /// The one node group upgraded, or every one when absent.
        #[serde(default)]
        nodegroup: Option<NodeGroupId>,
    },
    /// A delete; `forced` when an administrator forced it (`DELETE ...?force=true`): one
    /// best-effort attempt, then the row goes whatever the driver answered.
    #[serde(rename = "cluster.delete")]
    ClusterDelete {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        forced: Option<ForcedBy>,
    },
    #[serde(rename = "nodegroup.create")]
    NodegroupCreate { nodegroup: NodeGroupId },
    #[serde(rename = "nodegroup.update")]
    NodegroupUpdate { nodegroup: NodeGroupId },
    /// A node group delete; `forced` as a cluster delete's (one best-effort attempt, then the
    /// node group's row goes whatever the driver answered).
    #[serde(rename = "nodegroup.delete")]
    NodegroupDelete {
        nodegroup: NodeGroupId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        forced: Option<ForcedBy>,
    },
    /// A node group's machines replaced, at most `max_batch_size` at a time, each by one on
    /// the group's flavor and image (already written), the new one first.
    #[serde(rename = "nodegroup.roll")]
    NodegroupRoll {
        nodegroup: NodeGroupId,
        #[serde(default = "one")]
        max_batch_size: i32,
        /// The kubelet every machine ends on, when the roll is a version change (a
        /// `MachineDeployment`'s `spec.template.spec.versions.kubelet`); absent, each machine
        /// keeps its versions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kubelet: Option<crate::domain::machine::KubeVersion>,
    },
    #[serde(rename = "federation.create")]
    FederationCreate {},
    #[serde(rename = "federation.update")]
    FederationUpdate {
        #[serde(default)]
        joined: Vec<ClusterId>,
        #[serde(default)]
        unjoined: Vec<ClusterId>,
    },
    /// A federation delete; `forced` as a cluster delete's (one best-effort attempt, then the
    /// federation's row goes whatever the driver answered).
    #[serde(rename = "federation.delete")]
    FederationDelete {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        forced: Option<ForcedBy>,
    },
    /// The new CA's row uuid, fixed when the request is accepted so a retried job finds the
    /// rotation done (absent: the job's own uuid).
    #[serde(rename = "cluster.rotate_ca")]
    CaRotate {
        #[serde(default)]
        rotation: Option<uuid::Uuid>,
    },
    /// The renewed client certificate's row uuid, fixed like a rotation's.
    #[serde(rename = "cluster.rotate_credential")]
    CredentialRotate {
        #[serde(default)]
        client: Option<uuid::Uuid>,
    },
    /// A change of the machine's spec (already written), applied as the driver planned it.
    #[serde(rename = "machine.update")]
    MachineUpdate {
        machine: MachineId,
        mode: ChangeMode,
    },
    /// The machine replaced by a new one, the new one first.
    #[serde(rename = "machine.replace")]
    MachineReplace { machine: MachineId },
    #[serde(rename = "machine.reboot")]
    MachineReboot { machine: MachineId },
}

fn one() -> i32 {
    1
}

/// Who forced a delete, for its audit notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForcedBy {
    pub user_id: String,
    pub project_id: String,
    #[serde(default)]
    pub request_id: Option<String>,
}

impl JobPayload {
    pub fn operation(&self) -> Operation {
        match self {
            JobPayload::ClusterCreate {} => Operation::ClusterCreate,
            JobPayload::ClusterUpdate { .. } => Operation::ClusterUpdate,
            JobPayload::ClusterResize { .. } => Operation::ClusterResize,
            JobPayload::ClusterUpgrade { .. } => Operation::ClusterUpgrade,
            JobPayload::ClusterDelete { .. } => Operation::ClusterDelete,
            JobPayload::NodegroupCreate { .. } => Operation::NodegroupCreate,
            JobPayload::NodegroupUpdate { .. } => Operation::NodegroupUpdate,
            JobPayload::NodegroupDelete { .. } => Operation::NodegroupDelete,
            JobPayload::NodegroupRoll { .. } => Operation::NodegroupRoll,
            JobPayload::FederationCreate {} => Operation::FederationCreate,
            JobPayload::FederationUpdate { .. } => Operation::FederationUpdate,
            JobPayload::FederationDelete { .. } => Operation::FederationDelete,
            JobPayload::CaRotate { .. } => Operation::CaRotate,
            JobPayload::CredentialRotate { .. } => Operation::CredentialRotate,
            JobPayload::MachineUpdate { .. } => Operation::MachineUpdate,
            JobPayload::MachineReplace { .. } => Operation::MachineReplace,
            JobPayload::MachineReboot { .. } => Operation::MachineReboot,
        }
    }

    /// The node group the job works on, for the operations that name one.
    pub fn nodegroup(&self) -> Option<NodeGroupId> {
        match self {
            JobPayload::ClusterUpdate { nodegroup, .. }
            | JobPayload::ClusterResize { nodegroup, .. }
            | JobPayload::NodegroupCreate { nodegroup }
            | JobPayload::NodegroupUpdate { nodegroup }
            | JobPayload::NodegroupDelete { nodegroup, .. }
            | JobPayload::NodegroupRoll { nodegroup, .. } => Some(*nodegroup),
            JobPayload::ClusterUpgrade { nodegroup, .. } => *nodegroup,
            _ => None,
        }
    }

    /// The machine the job works on, for the machine operations.
    pub fn machine(&self) -> Option<MachineId> {
        match self {
            JobPayload::MachineUpdate { machine, .. }
            | JobPayload::MachineReplace { machine }
            | JobPayload::MachineReboot { machine } => Some(*machine),
            _ => None,
        }
    }

    /// The `payload` column's value: the arguments without the tag.
    pub fn stored(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut tagged)) => tagged.remove("arguments").unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }

    /// The payload of a stored job: its `operation` column and its `payload` column.
    pub fn from_stored(operation: Operation, arguments: Value) -> Result<JobPayload, String> {
        let tagged = serde_json::json!({"operation": operation.as_str(), "arguments": arguments});
        serde_json::from_value(tagged).map_err(|e| format!("{}: {e}", operation.as_str()))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub uuid: JobId,
    pub resource: JobResource,
    pub driver: String,
    /// The operation and its arguments (e.g. the old and new node counts, the member diff).
    pub payload: JobPayload,
    /// After this, the job fails instead of retrying (the cluster's `create_timeout`);
    /// without it, refusals are bounded by `[conductor] operation_timeout`.
    pub deadline_at: Option<DateTime<Utc>>,
    /// Attempts before the job fails for good; 0: no limit but the deadline.
    pub max_attempts: i32,
}

impl NewJob {
    pub fn new(
        payload: JobPayload,
        resource: impl Into<JobResource>,
        driver: impl Into<String>,
    ) -> NewJob {
        NewJob {
            uuid: JobId::new(),
            resource: resource.into(),
            driver: driver.into(),
            payload,
            deadline_at: None,
            max_attempts: 0,
        }
    }

    pub fn operation(&self) -> Operation {
        self.payload.operation()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: i64,
    pub uuid: JobId,
    /// Always `payload.operation()`.
    pub operation: Operation,
    pub resource: JobResource,
    pub driver: String,
    pub payload: JobPayload,
    pub attempts: i32,
    pub max_attempts: i32,
    pub deadline_at: Option<DateTime<Utc>>,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    /// When a transient refusal first stopped the job (`None` until one did).
    pub blocked_since: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operations_round_trip_and_name_their_resource() {
        for op in [
            Operation::ClusterCreate,
            Operation::NodegroupDelete,
            Operation::FederationUpdate,
            Operation::CaRotate,
        ] {
            assert_eq!(Operation::parse(op.as_str()), Some(op));
        }
        assert_eq!(Operation::FederationUpdate.resource_type(), "federation");
        assert_eq!(Operation::CaRotate.resource_type(), "cluster");
    }

    #[test]
    fn payloads_are_tagged_by_their_operation_and_stored_as_earlier_releases_wrote_them() {
        let ng = "6a3c4a43-7c1d-4c0c-9b9e-0d2a3b4c5d6e";
        let t = "0b0e8c8e-1d5e-4f7a-9a51-2c3d4e5f6a7b";
        let stored = [
            (Operation::ClusterCreate, json!({})),
            (
                Operation::ClusterUpdate,
                json!({"nodegroup": ng, "old_node_count": 1, "node_count": 2, "rollback": true}),
            ),
            (
                Operation::ClusterResize,
                json!({"nodegroup": ng, "old_node_count": 3, "node_count": 1, "nodes_to_remove": ["n-1"]}),
            ),
            (
                Operation::ClusterUpgrade,
                json!({"old_template": t, "template": t, "max_batch_size": 2, "nodegroup": null}),
            ),
            (Operation::ClusterDelete, json!({})),
            (Operation::NodegroupCreate, json!({"nodegroup": ng})),
            (Operation::NodegroupUpdate, json!({"nodegroup": ng})),
            (Operation::NodegroupDelete, json!({"nodegroup": ng})),
            (
                Operation::NodegroupRoll,
                json!({"nodegroup": ng, "max_batch_size": 2}),
            ),
            (Operation::FederationCreate, json!({})),
            (
                Operation::FederationUpdate,
                json!({"joined": [t], "unjoined": []}),
            ),
            (Operation::FederationDelete, json!({})),
            (Operation::CaRotate, json!({"rotation": t})),
            (Operation::CredentialRotate, json!({"client": t})),
            (
                Operation::MachineUpdate,
                json!({"machine": t, "mode": "InPlace"}),
            ),
            (Operation::MachineReplace, json!({"machine": t})),
            (Operation::MachineReboot, json!({"machine": t})),
        ];
        for (operation, arguments) in stored {
            let payload = JobPayload::from_stored(operation, arguments.clone()).expect("reads");
            assert_eq!(payload.operation(), operation);
            assert_eq!(payload.stored(), arguments, "{}", operation.as_str());
            let tagged = serde_json::to_value(&payload).expect("serializes");
            assert_eq!(tagged["operation"], operation.as_str());
        }
    }

    #[test]
    fn a_forced_delete_names_who_forced_it_and_a_plain_one_stays_empty() {
        let forced = JobPayload::ClusterDelete {
            forced: Some(ForcedBy {
                user_id: "u".into(),
                project_id: "p".into(),
                request_id: Some("req-1".into()),
            }),
        };
        let stored = forced.stored();
        assert_eq!(
            stored,
            json!({"forced": {"user_id": "u", "project_id": "p", "request_id": "req-1"}})
        );
        assert_eq!(
            JobPayload::from_stored(Operation::ClusterDelete, stored).expect("reads"),
            forced
        );
        assert_eq!(
            JobPayload::ClusterDelete { forced: None }.stored(),
            json!({})
        );
    }

    #[test]
    fn forced_node_group_and_federation_deletes_keep_the_plain_stored_form_when_not_forced() {
        let by = ForcedBy {
            user_id: "u".into(),
            project_id: "p".into(),
            request_id: None,
        };
        let ng = NodeGroupId(uuid::Uuid::nil());
        let forced = JobPayload::NodegroupDelete {
            nodegroup: ng,
            forced: Some(by.clone()),
        };
        let stored = forced.stored();
        assert_eq!(
            stored,
            json!({"nodegroup": ng.to_string(),
                   "forced": {"user_id": "u", "project_id": "p", "request_id": null}})
        );
        assert_eq!(
            JobPayload::from_stored(Operation::NodegroupDelete, stored).expect("reads"),
            forced
        );
        // Jobs queued before forced deletes existed read as plain deletes.
        assert_eq!(
            JobPayload::from_stored(
                Operation::NodegroupDelete,
                json!({"nodegroup": ng.to_string()})
            )
            .expect("reads"),
            JobPayload::NodegroupDelete {
                nodegroup: ng,
                forced: None
            }
        );
        assert_eq!(
            JobPayload::from_stored(Operation::FederationDelete, json!({})).expect("reads"),
            JobPayload::FederationDelete { forced: None }
        );
        let fed = JobPayload::FederationDelete { forced: Some(by) };
        assert_eq!(
            JobPayload::from_stored(Operation::FederationDelete, fed.stored()).expect("reads"),
            fed
        );
    }

    #[test]
    fn a_payload_missing_what_its_operation_needs_is_refused() {
        let err = JobPayload::from_stored(Operation::ClusterResize, json!({})).expect_err("no ng");
        assert!(
            err.starts_with("cluster.resize: missing field `nodegroup`"),
            "{err}"
        );
        let upgrade = JobPayload::from_stored(
            Operation::ClusterUpgrade,
            json!({"old_template": "0b0e8c8e-1d5e-4f7a-9a51-2c3d4e5f6a7b",
                   "template": "0b0e8c8e-1d5e-4f7a-9a51-2c3d4e5f6a7b"}),
        )
        .expect("defaults");
        assert!(matches!(
            upgrade,
            JobPayload::ClusterUpgrade {
                max_batch_size: 1,
                nodegroup: None,
                ..
            }
        ));
    }

    #[test]
    fn a_stored_job_names_a_federation_only_for_federation_operations() {
        let uuid = uuid::Uuid::new_v4();
        assert_eq!(
            JobResource::of(Operation::FederationDelete, uuid),
            JobResource::Federation(FederationId(uuid))
        );
        for op in [
            Operation::NodegroupCreate,
            Operation::ClusterResize,
            Operation::CaRotate,
        ] {
            assert_eq!(
                JobResource::of(op, uuid),
                JobResource::Cluster(ClusterId(uuid))
            );
        }
        assert_eq!(JobResource::of(Operation::ClusterCreate, uuid).uuid(), uuid);
    }
}
