//! Durable driver work. The API writes a job with the change it belongs to; a conductor claims
//! it under a lease, calls the driver and moves the resource's status on.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{ClusterId, FederationId, Id, JobId};

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

#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub uuid: JobId,
    pub operation: Operation,
    pub resource: JobResource,
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
        resource: impl Into<JobResource>,
        driver: impl Into<String>,
        payload: Value,
    ) -> NewJob {
        NewJob {
            uuid: JobId::new(),
            operation,
            resource: resource.into(),
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
    pub uuid: JobId,
    pub operation: Operation,
    pub resource: JobResource,
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

/// How an attempt of a job failed, as its retry rule sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure<'a> {
    /// Worth another attempt (backend unreachable, conflict, timeout).
    Transient(&'a str),
    /// Another attempt cannot help.
    Permanent(&'a str),
}

/// What a failed attempt leads to: [`Job::next_step`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextStep {
    /// The job runs again, not before `run_after`.
    Retry { run_after: DateTime<Utc> },
    /// The job fails for good; the resource goes `*_FAILED` with `reason`.
    Fail { reason: String },
}

/// The wait before attempt `attempts + 1`: 1, 2, 4, ... seconds, capped at 60.
pub fn backoff(attempts: i32) -> chrono::Duration {
    let exp = attempts.clamp(1, 7) - 1;
    chrono::Duration::seconds((1_i64 << exp).min(60))
}

impl Job {
    /// Whether the job's deadline (the cluster's `create_timeout`) has passed at `now`.
    pub fn deadline_passed(&self, now: DateTime<Utc>) -> bool {
        self.deadline_at.is_some_and(|d| now > d)
    }

    /// The one retry rule of every job: a transient failure is retried after [`backoff`]
    /// while attempts remain and the deadline has not passed; anything else fails the job,
    /// a transient failure saying how many attempts it took.
    pub fn next_step(&self, failure: Failure<'_>, now: DateTime<Utc>) -> NextStep {
        match failure {
            Failure::Transient(_)
                if self.attempts < self.max_attempts && !self.deadline_passed(now) =>
            {
                NextStep::Retry {
                    run_after: now + backoff(self.attempts),
                }
            }
            Failure::Transient(message) => NextStep::Fail {
                reason: format!("{message} (gave up after {} attempts)", self.attempts),
            },
            Failure::Permanent(message) => NextStep::Fail {
                reason: message.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(attempts: i32, max_attempts: i32, deadline_at: Option<DateTime<Utc>>) -> Job {
        Job {
            id: 1,
            uuid: JobId::new(),
            operation: Operation::ClusterCreate,
            resource: ClusterId::new().into(),
            driver: "fake".into(),
            payload: Value::Null,
            attempts,
            max_attempts,
            deadline_at,
            lease_owner: None,
            lease_expires_at: None,
            last_error: None,
            created_at: Utc::now(),
        }
    }

    #[test]
    fn a_transient_failure_is_retried_with_a_growing_capped_backoff() {
        let now = Utc::now();
        for (attempts, wait) in [(1, 1), (2, 2), (3, 4), (6, 32), (7, 60), (40, 60)] {
            assert_eq!(
                job(attempts, 100, None).next_step(Failure::Transient("busy"), now),
                NextStep::Retry {
                    run_after: now + chrono::Duration::seconds(wait)
                },
                "attempt {attempts}"
            );
        }
    }

    #[test]
    fn a_transient_failure_fails_the_job_once_attempts_or_the_deadline_run_out() {
        let now = Utc::now();
        assert_eq!(
            job(5, 5, None).next_step(Failure::Transient("backend unreachable"), now),
            NextStep::Fail {
                reason: "backend unreachable (gave up after 5 attempts)".into()
            }
        );
        let past = now - chrono::Duration::seconds(1);
        assert_eq!(
            job(1, 5, Some(past)).next_step(Failure::Transient("slow"), now),
            NextStep::Fail {
                reason: "slow (gave up after 1 attempts)".into()
            }
        );
        assert!(!job(1, 5, Some(now)).deadline_passed(now));
    }

    #[test]
    fn a_permanent_failure_fails_the_job_at_once_with_its_message() {
        assert_eq!(
            job(1, 5, None).next_step(Failure::Permanent("no such image"), Utc::now()),
            NextStep::Fail {
                reason: "no such image".into()
            }
        );
    }

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
