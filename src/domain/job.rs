//! Durable driver work. The API writes a job with the change it belongs to; a conductor claims
//! it under a lease, calls the driver and moves the resource's status on.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::ResourceId;

macro_rules! operations {
    ($($variant:ident = $text:literal),+ $(,)?) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Operation { $($variant),+ }
        impl Operation {
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
    FederationCreate = "federation.create",
    FederationUpdate = "federation.update",
    FederationDelete = "federation.delete",
    CaRotate = "cluster.rotate_ca",
    CredentialRotate = "cluster.rotate_credential",
}

impl Operation {
    /// The kind of resource the job works on.
    pub fn resource_type(&self) -> &'static str {
        let text = self.as_str();
        text.split('.').next().unwrap_or(text)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub uuid: ResourceId,
    pub operation: Operation,
    pub resource_uuid: String,
    pub driver: String,
    /// Operation arguments (e.g. the old and new node counts, the member diff).
    pub payload: Value,
    /// After this, the job fails instead of retrying (the cluster's `create_timeout`).
    pub deadline_at: Option<DateTime<Utc>>,
    pub max_attempts: i32,
}

impl NewJob {
    pub fn new(
        operation: Operation,
        resource_uuid: impl Into<String>,
        driver: impl Into<String>,
        payload: Value,
    ) -> NewJob {
        NewJob {
            uuid: ResourceId::new(),
            operation,
            resource_uuid: resource_uuid.into(),
            driver: driver.into(),
            payload,
            deadline_at: None,
            max_attempts: 5,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: i64,
    pub uuid: String,
    pub operation: Operation,
    pub resource_uuid: String,
    pub driver: String,
    pub payload: Value,
    pub attempts: i32,
    pub max_attempts: i32,
    pub deadline_at: Option<DateTime<Utc>>,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
