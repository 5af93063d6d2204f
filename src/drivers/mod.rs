//! Per-COE drivers. A driver starts work on a backend and reports what it observes; the
//! conductor owns every status change. Operations are idempotent: a retried job calls the
//! same operation again and must not create anything twice.

pub mod external;
pub mod fake;
pub mod kubernetes;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

use crate::config::{split_list, DriversSection, FakeDriverSection};
use crate::domain::cluster::{Cluster, NodeGroup};
use crate::domain::federation::Federation;
use crate::domain::leftover::Leftover;
use crate::domain::machine::{ChangeMode, Machine, MachineAddress, MachineSpec, MachineVersions};
use crate::domain::template::ClusterTemplate;
use crate::domain::{ClusterId, MachineId};

/// What a driver serves: Magnum's `(server_type, os, coe)` tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provides {
    pub server_type: &'static str,
    pub os: &'static str,
    pub coe: &'static str,
}

/// Operations a driver may or may not support; the API refuses unsupported ones with 400
/// before accepting the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    pub federation: bool,
    pub rotate_ca: bool,
    pub rotate_credential: bool,
    pub master_resize: bool,
    pub upgrade: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DriverError {
    /// Worth retrying (backend unreachable, conflict, timeout).
    #[error("{0}")]
    Transient(String),
    /// Retrying cannot help; the resource goes `*_FAILED` with this reason.
    #[error("{0}")]
    Permanent(String),
    /// A delete that stopped short: why, whether another attempt may finish it, and what the
    /// backend still holds (typed, by kind and id). A delete that ends this way goes
    /// `DELETE_FAILED` with the leftovers named in its reason and its notification.
    #[error("{reason}")]
    Incomplete {
        reason: String,
        transient: bool,
        leftovers: Vec<Leftover>,
    },
}

impl DriverError {
    /// The failure as a job's retry rule ([`crate::domain::job::Job::next_step`]) sees it.
    pub fn failure(&self) -> crate::domain::job::Failure<'_> {
        use crate::domain::job::Failure;
        match self {
            DriverError::Transient(message) => Failure::Transient(message),
            DriverError::Permanent(message) => Failure::Permanent(message),
            DriverError::Incomplete {
                reason,
                transient: true,
                ..
            } => Failure::Transient(reason),
            DriverError::Incomplete { reason, .. } => Failure::Permanent(reason),
        }
    }

    /// Whether another attempt may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            DriverError::Transient(_)
                | DriverError::Incomplete {
                    transient: true,
                    ..
                }
        )
    }

    /// What the backend still holds, for a delete that stopped short (else nothing).
    pub fn leftovers(&self) -> &[Leftover] {
        match self {
            DriverError::Incomplete { leftovers, .. } => leftovers,
            _ => &[],
        }
    }

    /// The same failure of a delete, with what it left behind.
    pub fn leaving(self, leftovers: Vec<Leftover>) -> DriverError {
        let transient = self.is_transient();
        let reason = self.to_string();
        DriverError::Incomplete {
            reason,
            transient,
            leftovers,
        }
    }
}

pub type DriverResult<T> = Result<T, DriverError>;

/// The reason a join fails when clusters it was to join no longer exist: every one is named.
pub(crate) fn missing_members(missing: &[&str]) -> String {
    match missing {
        [one] => format!("The member cluster {one} no longer exists."),
        many => format!("The member clusters {} no longer exist.", many.join(", ")),
    }
}

/// Everything a driver needs about one cluster.
#[derive(Debug, Clone)]
pub struct ClusterContext {
    /// Which attempt at the current job this is (1 for the first).
    pub attempt: i32,
    /// The job this context is for, when it is one machine's operation: every attempt of the
    /// job has the same, so a driver can tell a retry of an operation it finished from a new
    /// one (`None` elsewhere).
    pub job: Option<crate::domain::JobId>,
    pub cluster: Cluster,
    pub nodegroups: Vec<NodeGroup>,
    pub template: ClusterTemplate,
    /// The cluster's CAs, loaded for the conductor's jobs (create, CA rotation, updates) when
    /// the cluster has them; `None` in status and health polls, and for clusters made without
    /// a `[certificates]` key. A driver that hands the CA to the backend writes it when this is
    /// set and leaves the backend's copy alone when it is not.
    pub ca: Option<CaMaterial>,
    /// The cluster's machines, in id order: every node group's first
    /// [`crate::store::CONTEXT_MACHINES`].
    pub machines: Vec<Machine>,
}

/// A certificate and its private key, PEM-encoded (the key redacted in debug output).
#[derive(Debug, Clone, PartialEq)]
pub struct CertKeyPair {
    pub certificate: String,
    pub private_key: crate::config::Secret,
}

/// A cluster's CAs as drivers get them. The kubernetes driver writes `ca` into the
/// `<cluster>-ca` Secret (`tls.crt`/`tls.key`) before it applies the Cluster API objects, so
/// the cluster trusts the CA `GET /v1/certificates` returns and the certificates
/// `POST /v1/certificates` signs; `etcd` and `front_proxy` go to `<cluster>-etcd` and
/// `<cluster>-proxy` the same way.
#[derive(Debug, Clone, PartialEq)]
pub struct CaMaterial {
    /// The Kubernetes CA certificate (PEM).
    pub certificate: String,
    /// Its private key (PEM, PKCS#8, ECDSA P-256).
    pub private_key: crate::config::Secret,
    pub etcd: Option<CertKeyPair>,
    pub front_proxy: Option<CertKeyPair>,
}

/// One machine as the backend sees it: what the driver knows of its node. Its phase is the
/// conductor's to settle; what is reported here becomes the machine's status.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MachineObservation {
    pub provider_id: Option<String>,
    pub node_ref: Option<String>,
    pub addresses: Vec<MachineAddress>,
    /// The versions the node runs.
    pub versions: MachineVersions,
    pub error_reason: Option<String>,
    pub error_message: Option<String>,
}

/// A node group as the backend sees it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeGroupObservation {
    pub node_count: Option<i32>,
    pub node_addresses: Vec<String>,
    pub ready: bool,
    pub version: Option<String>,
}

/// Where the backend is with the cluster's current operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    InProgress,
    Complete,
    Failed(String),
    /// The backend has nothing left (a delete finished).
    Gone,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClusterObservation {
    pub phase: Phase,
    /// The backend handle (`stack_id` / `cluster_id` in the API).
    pub stack_id: Option<String>,
    pub api_address: Option<String>,
    pub coe_version: Option<String>,
    pub container_version: Option<String>,
    /// By node group uuid.
    pub nodegroups: BTreeMap<String, NodeGroupObservation>,
    /// While a delete is under way: what the backend still holds. A delete that does not
    /// finish within `[conductor] delete_timeout` fails naming these.
    pub leftovers: Vec<Leftover>,
    /// The machines of `ClusterContext::machines` the backend reports on, by uuid.
    pub machines: BTreeMap<MachineId, MachineObservation>,
}

impl ClusterObservation {
    pub fn phase(phase: Phase) -> ClusterObservation {
        ClusterObservation {
            phase,
            stack_id: None,
            api_address: None,
            coe_version: None,
            container_version: None,
            nodegroups: BTreeMap::new(),
            leftovers: Vec::new(),
            machines: BTreeMap::new(),
        }
    }
}

/// Cluster health as a poll sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthObservation {
    pub healthy: Option<bool>,
    pub reason: BTreeMap<String, String>,
}

/// A federation with its host and the member clusters that still exist.
#[derive(Debug, Clone)]
pub struct FederationContext {
    pub federation: Federation,
    pub host: Option<ClusterContext>,
    pub members: Vec<Cluster>,
}

/// The change a federation update applies.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemberChange {
    pub joined: Vec<ClusterId>,
    pub unjoined: Vec<ClusterId>,
}

/// What an operation left behind: finished, or started and to be followed by polling.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    Done(ClusterObservation),
    Started(ClusterObservation),
}

#[derive(Debug, Clone, PartialEq)]
pub enum FederationProgress {
    Done,
    Started,
    /// Done, with a note for `status_reason` (e.g. best-effort clean-up that failed).
    DoneWithNote(String),
}

pub use crate::domain::machine::requests::MachineAction;

/// Resize arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Resize {
    pub nodegroup: String,
    pub node_count: i32,
    pub nodes_to_remove: Vec<String>,
}

#[async_trait]
pub trait Driver: Send + Sync {
    fn name(&self) -> &'static str;
    fn provides(&self) -> &[Provides];
    fn capabilities(&self) -> Capabilities;

    /// Masters must be odd and at least one (etcd quorum).
    fn validate_master_size(&self, count: i32) -> Result<(), String> {
        if count < 1 || count % 2 == 0 {
            return Err(format!(
                "master nodegroup size of {count} is invalid, size cannot be an even number."
            ));
        }
        Ok(())
    }

    async fn create_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress>;
    /// Node counts changed (PATCH `node_count`, node group edits).
    async fn update_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress>;
    async fn resize_cluster(&self, ctx: &ClusterContext, resize: &Resize)
        -> DriverResult<Progress>;
    async fn upgrade_cluster(
        &self,
        ctx: &ClusterContext,
        template: &ClusterTemplate,
        max_batch_size: i32,
        nodegroup: Option<&str>,
    ) -> DriverResult<Progress>;
    async fn delete_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress>;
    async fn create_nodegroup(
        &self,
        ctx: &ClusterContext,
        nodegroup: &NodeGroup,
    ) -> DriverResult<Progress>;
    async fn update_nodegroup(
        &self,
        ctx: &ClusterContext,
        nodegroup: &NodeGroup,
    ) -> DriverResult<Progress>;
    async fn delete_nodegroup(
        &self,
        ctx: &ClusterContext,
        nodegroup: &NodeGroup,
    ) -> DriverResult<Progress>;
    /// Polled while the cluster is `*_IN_PROGRESS`.
    async fn cluster_status(&self, ctx: &ClusterContext) -> DriverResult<ClusterObservation>;
    /// Health, for drivers that can tell; `None` leaves the stored health alone.
    async fn cluster_health(&self, ctx: &ClusterContext)
        -> DriverResult<Option<HealthObservation>>;
    async fn rotate_ca(&self, ctx: &ClusterContext) -> DriverResult<Progress>;
    /// Rotates the credential the cluster uses to reach the cloud (Magnum's application
    /// credential), for drivers whose capabilities say `rotate_credential`. The service's own
    /// client certificate is renewed by the conductor before this is called (`ctx.ca` is the
    /// current CA).
    async fn rotate_credential(&self, _ctx: &ClusterContext) -> DriverResult<()> {
        Err(DriverError::Permanent(
            "Credential rotation is not supported by driver.".into(),
        ))
    }

    // ---- One machine's operations -------------------------------------------------------
    // Asked before the API writes anything (`plan_machine_change`, `check_machine_action`);
    // a refusal is the 400's sentence. The operations report the machine in the observation's
    // `machines`, as the rest of the cluster's status.

    /// How `next` (the machine's whole spec after the change) would be applied to `machine`:
    /// on the node or by a new node, or why it cannot be.
    fn plan_machine_change(
        &self,
        _machine: &Machine,
        _next: &MachineSpec,
    ) -> Result<ChangeMode, String> {
        Err(format!(
            "The {} driver cannot change machines.",
            self.name()
        ))
    }

    /// Whether the driver can replace or reboot `machine`, or why not.
    fn check_machine_action(
        &self,
        _machine: &Machine,
        action: MachineAction,
    ) -> Result<(), String> {
        Err(format!(
            "The {} driver cannot {} machines.",
            self.name(),
            action.as_str()
        ))
    }

    /// Applies the machine's spec, as planned.
    async fn update_machine(
        &self,
        _ctx: &ClusterContext,
        _machine: &Machine,
        _mode: ChangeMode,
    ) -> DriverResult<Progress> {
        Err(DriverError::Permanent(format!(
            "The {} driver cannot change machines.",
            self.name()
        )))
    }

    /// Replaces the machine: a new node first, then the old one goes.
    async fn replace_machine(
        &self,
        _ctx: &ClusterContext,
        _machine: &Machine,
    ) -> DriverResult<Progress> {
        Err(DriverError::Permanent(format!(
            "The {} driver cannot replace machines.",
            self.name()
        )))
    }

    /// Whether the driver rolls this group's machines onto a new flavor or image as a whole
    /// ([`Driver::roll_nodegroup`], the backend's own roll-out) rather than one by one
    /// ([`Driver::replace_machine`], `max_batch_size` at a time).
    fn rolls_whole_group(&self, _nodegroup: &NodeGroup) -> bool {
        false
    }

    /// One step of a whole group's roll onto its current flavor and image: `Started` while the
    /// backend rolls, `Done` once every machine of `rolling` was replaced, each reported in the
    /// observation's `machines` with its new server. Asked again until done, and again after a
    /// restart or a failure: it must never start a second roll-out.
    async fn roll_nodegroup(
        &self,
        _ctx: &ClusterContext,
        nodegroup: &NodeGroup,
        _rolling: &[Machine],
    ) -> DriverResult<Progress> {
        Err(DriverError::Permanent(format!(
            "The {} driver cannot roll node group {} as a whole.",
            self.name(),
            nodegroup.name
        )))
    }

    async fn reboot_machine(
        &self,
        _ctx: &ClusterContext,
        _machine: &Machine,
    ) -> DriverResult<Progress> {
        Err(DriverError::Permanent(format!(
            "The {} driver cannot reboot machines.",
            self.name()
        )))
    }
    // ---- end of one machine's operations -------------------------------------------------

    async fn create_federation(&self, ctx: &FederationContext) -> DriverResult<FederationProgress>;
    async fn update_federation(
        &self,
        ctx: &FederationContext,
        change: &MemberChange,
    ) -> DriverResult<FederationProgress>;
    async fn delete_federation(&self, ctx: &FederationContext) -> DriverResult<FederationProgress>;
    /// Polled while the federation is `*_IN_PROGRESS` after a `Started` answer.
    async fn federation_status(&self, ctx: &FederationContext) -> DriverResult<Phase>;
}

/// The drivers this build provides: `fake` (a simulator for demos, tests and scale tests) and
/// `kubernetes` (Cluster API on a management cluster).
pub const PROVIDED: &[&str] = &["fake", "kubernetes"];

/// The enabled drivers, by name.
#[derive(Clone)]
pub struct DriverRegistry {
    drivers: BTreeMap<String, Arc<dyn Driver>>,
    enabled: Vec<String>,
}

impl std::fmt::Debug for DriverRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriverRegistry")
            .field("enabled", &self.enabled)
            .finish()
    }
}

impl DriverRegistry {
    pub fn from_settings(s: &DriversSection) -> Result<DriverRegistry, String> {
        Self::build(s, &FakeDriverSection::default())
    }

    pub fn build(s: &DriversSection, fake: &FakeDriverSection) -> Result<DriverRegistry, String> {
        let disabled = split_list(&s.disabled_drivers);
        for name in &disabled {
            if !PROVIDED.contains(&name.as_str()) {
                return Err(format!(
                    "[drivers] disabled_drivers: unknown driver '{name}'"
                ));
            }
        }
        let enabled: Vec<String> = PROVIDED
            .iter()
            .filter(|p| !disabled.iter().any(|d| d == *p))
            .map(|p| p.to_string())
            .collect();
        if !enabled.contains(&s.default_driver) {
            return Err(format!(
                "[drivers] default_driver: '{}' is not an enabled driver (enabled: {})",
                s.default_driver,
                enabled.join(", ")
            ));
        }
        let mut drivers: BTreeMap<String, Arc<dyn Driver>> = BTreeMap::new();
        if enabled.iter().any(|d| d == "fake") {
            drivers.insert("fake".into(), Arc::new(fake::FakeDriver::new(fake.clone())));
        }
        Ok(DriverRegistry { drivers, enabled })
    }

    /// Registers (or replaces) a driver instance, e.g. a configured kubernetes driver.
    pub fn insert(&mut self, driver: Arc<dyn Driver>) {
        let name = driver.name().to_string();
        if !self.enabled.contains(&name) {
            self.enabled.push(name.clone());
        }
        self.drivers.insert(name, driver);
    }

    /// Whether templates may name this driver.
    pub fn is_available(&self, name: &str) -> bool {
        self.enabled.iter().any(|d| d == name)
    }

    /// The driver that does the work, when it is configured in this process.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Driver>> {
        // Registered clusters' driver: always there, never named by a template.
        if name == crate::domain::registry::EXTERNAL_DRIVER {
            return Some(Arc::new(external::ExternalDriver));
        }
        if !self.is_available(name) {
            return None;
        }
        self.drivers.get(name).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_drivers_are_not_available() {
        let r = DriverRegistry::from_settings(&DriversSection {
            default_driver: "fake".into(),
            disabled_drivers: "kubernetes".into(),
        })
        .expect("valid");
        assert!(r.is_available("fake"));
        assert!(r.get("fake").is_some());
        assert!(!r.is_available("kubernetes"));
        assert!(!r.is_available("heat"));
    }

    #[test]
    fn the_default_driver_must_be_enabled() {
        let err = DriverRegistry::from_settings(&DriversSection {
            default_driver: "fake".into(),
            disabled_drivers: "fake".into(),
        })
        .expect_err("invalid");
        assert!(err.starts_with("[drivers] default_driver"));
    }

    #[test]
    fn masters_must_be_odd() {
        let r = DriverRegistry::from_settings(&DriversSection::default()).expect("valid");
        let fake = r.get("fake").expect("fake");
        assert!(fake.validate_master_size(1).is_ok());
        assert!(fake.validate_master_size(3).is_ok());
        assert_eq!(
            fake.validate_master_size(2).expect_err("even"),
            "master nodegroup size of 2 is invalid, size cannot be an even number."
        );
    }
}
