//! The `kubernetes` driver: Cluster API on a management cluster, as Magnum's maintained drivers
//! do it (magnum-capi-helm, vexxhost's magnum-cluster-api), and Karmada for federations.
//!
//! * create renders the cluster's Cluster API objects ([`render`]) and server-side applies
//!   them to `[kubernetes_driver] namespace` of the management cluster; the status poll
//!   ([`status`]) reads them back until Cluster API reports the cluster provisioned.
//! * resize and node-count updates patch `replicas` (and mark `nodes_to_remove` machines with
//!   `cluster.x-k8s.io/delete-machine`); upgrade re-renders the targeted groups with the new
//!   template's `kube_tag` and image and lets Cluster API roll the machines (in place or by
//!   replacement is its choice, KEP-3's principle); delete removes the `Cluster` and reports
//!   the cluster gone only once the management cluster answers 404.
//! * one machine's operations ([`machines`]): a worker is replaced new-first through its
//!   MachineDeployment; what Cluster API only does per group (versions, images, flavors) or
//!   not at all (a lone master replaced) is refused with that reason; the master group's flavor
//!   or image change is rolled by the KubeadmControlPlane ([`control_plane_roll`]); a reboot
//!   goes through the workload cluster's own API, cordon, drain and a reboot Pod ([`reboot`]);
//! * `[kubernetes_driver] cluster_api_version` chooses `v1beta1` or `v1beta2` objects
//!   ([`capi`]);
//! * federations run on the host cluster through a [`federation::FederationEngine`]; members'
//!   and host's credentials are the `<cluster>-kubeconfig` Secrets Cluster API keeps.
//!
//! No group larger than the service's node limit (`[cluster] max_node_count`) is ever sent to
//! the management cluster: a job asking for one (queued before the limit was lowered, say)
//! fails with a sentence instead of having Cluster API make the machines.
//!
//! Every operation is idempotent: objects have deterministic names and are applied, deletes
//! tolerate 404. Unreachable servers, conflicts and 5xx answers are transient (the conductor
//! retries); refusals are permanent with the server's message.

pub mod capi;
pub mod client;
pub mod control_plane_roll;
pub mod federation;
pub mod machines;
pub mod reboot;
pub mod render;
mod scaling;
pub mod status;

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::config::KubernetesDriverSection;
use crate::domain::cluster::{Cluster, NodeGroup};
use crate::domain::leftover::Leftover;
use crate::domain::status::{ClusterStatus, FederationStatus};
use crate::domain::template::ClusterTemplate;

use super::{
    Capabilities, ClusterContext, ClusterObservation, Driver, DriverError, DriverResult,
    FederationContext, FederationProgress, HealthObservation, MachineAction, MemberChange, Phase,
    Progress, Provides, Resize,
};
use crate::domain::machine::{ChangeMode, Machine, MachineSpec};
use capi::CapiVersion;
use client::Kube;
use federation::{access_from_kubeconfig, ClusterAccess, FederationEngine, Karmada};
use render::{
    cluster_name, control_plane_name, deployment_name, kubeconfig_secret_name, normalize_version,
    Overrides, Renderer, CAPI_CLUSTER_NAME_LABEL, LABEL_CLUSTER_UUID,
};
use status::Observed;

const PROVIDES: &[Provides] = &[
    Provides {
        server_type: "vm",
        os: "ubuntu",
        coe: "kubernetes",
    },
    Provides {
        server_type: "vm",
        os: "flatcar",
        coe: "kubernetes",
    },
    Provides {
        server_type: "vm",
        os: "rockylinux",
        coe: "kubernetes",
    },
];

pub struct KubernetesDriver {
    settings: KubernetesDriverSection,
    kubeconfig: kube::config::Kubeconfig,
    management: OnceCell<Kube>,
    engine: Box<dyn FederationEngine>,
    /// The most nodes one group may have (`[cluster] max_node_count`).
    node_limit: i32,
    /// The Cluster API version written and read (`cluster_api_version`).
    capi: CapiVersion,
}

impl std::fmt::Debug for KubernetesDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesDriver")
            .field("kubeconfig", &self.settings.kubeconfig)
            .field("namespace", &self.settings.namespace)
            .field("engine", &self.engine.name())
            .finish()
    }
}

impl KubernetesDriver {
    /// Checks the section (the kubeconfig must be readable and name the context) and builds the
    /// driver; the management cluster is first contacted by the first operation.
    pub fn new(settings: KubernetesDriverSection) -> Result<KubernetesDriver, String> {
        let path = settings.kubeconfig.trim();
        if path.is_empty() {
            return Err("[kubernetes_driver] kubeconfig: not set".into());
        }
        let kubeconfig = kube::config::Kubeconfig::read_from(path)
            .map_err(|e| format!("[kubernetes_driver] kubeconfig: cannot read {path}: {e}"))?;
        let context = settings.context.trim();
        if !context.is_empty() && !kubeconfig.contexts.iter().any(|c| c.name == context) {
            return Err(format!(
                "[kubernetes_driver] context: {path} has no context '{context}'"
            ));
        }
        if settings.namespace.trim().is_empty() {
            return Err("[kubernetes_driver] namespace: must not be empty".into());
        }
        let capi = CapiVersion::parse(&settings.cluster_api_version)?;
        reboot::check_settings(&settings)?;
        let engine: Box<dyn FederationEngine> = match settings.federation_engine.as_str() {
            "karmada" => Box::new(Karmada::new(
                &settings.karmada_namespace,
                &settings.karmada_apiserver_service_type,
                Duration::from_secs(settings.request_timeout.max(1)),
            )),
            other => {
                return Err(format!(
                "[kubernetes_driver] federation_engine: unknown engine '{other}' (known: karmada)"
            ))
            }
        };
        Ok(KubernetesDriver {
            settings,
            kubeconfig,
            management: OnceCell::new(),
            engine,
            node_limit: crate::config::ClusterSection::default().max_node_count,
            capi,
        })
    }

    /// The driver with the service's node limit (`[cluster] max_node_count`).
    pub fn with_node_limit(mut self, limit: i32) -> KubernetesDriver {
        self.node_limit = limit;
        self
    }

    /// Refuses a node group of `count` nodes (or autoscaling bound) past the node limit.
    fn within_limit(&self, ctx: &ClusterContext, ng: &NodeGroup, count: i32) -> DriverResult<()> {
        let asked = count.max(ng.max_node_count.unwrap_or(0));
        if asked <= self.node_limit {
            return Ok(());
        }
        Err(DriverError::Permanent(format!(
            "Node group {} of cluster {} asks for {asked} nodes; a node group may have at most {} ([cluster] max_node_count).",
            ng.name, ctx.cluster.name, self.node_limit
        )))
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.settings.request_timeout.max(1))
    }

    fn ns(&self) -> &str {
        &self.settings.namespace
    }

    async fn management(&self) -> DriverResult<&Kube> {
        self.management
            .get_or_try_init(|| async {
                let context = Some(self.settings.context.trim()).filter(|c| !c.is_empty());
                Kube::connect(
                    self.kubeconfig.clone(),
                    context,
                    "the management cluster",
                    self.timeout(),
                )
                .await
            })
            .await
    }

    /// A client for a workload cluster, from the `<cluster>-kubeconfig` Secret.
    async fn cluster_access(&self, cluster: &Cluster) -> DriverResult<ClusterAccess> {
        let name = cluster_name(&cluster.uuid);
        let secret = kubeconfig_secret_name(&name);
        let text = self
            .management()
            .await?
            .secret_value(self.ns(), &secret, "value")
            .await?;
        let Some(text) = text else {
            let message = format!(
                "The kubeconfig of cluster {} (Secret {}/{secret} on the management cluster) does not exist",
                cluster.name,
                self.ns()
            );
            return Err(if cluster.status.is_in_progress() {
                DriverError::Transient(format!("{message} yet."))
            } else {
                DriverError::Permanent(format!(
                    "{message}: is the cluster managed by the kubernetes driver, and did it finish creating?"
                ))
            });
        };
        let what = format!("cluster {} ({name})", cluster.name);
        access_from_kubeconfig(
            &name,
            &cluster.uuid.to_string(),
            &text,
            what,
            self.timeout(),
        )
        .await
    }

    fn started(ctx: &ClusterContext) -> Progress {
        let mut obs = ClusterObservation::phase(Phase::InProgress);
        obs.stack_id = Some(cluster_name(&ctx.cluster.uuid));
        Progress::Started(obs)
    }

    async fn apply_all(&self, objects: &[Value]) -> DriverResult<()> {
        let mgmt = self.management().await?;
        for obj in objects {
            mgmt.apply(obj).await?;
        }
        Ok(())
    }

    fn find_group<'a>(ctx: &'a ClusterContext, id: &str) -> DriverResult<&'a NodeGroup> {
        ctx.nodegroups
            .iter()
            .find(|ng| ng.uuid.to_string() == id || ng.name == id)
            .ok_or_else(|| {
                DriverError::Permanent(format!(
                    "The cluster {} has no node group {id}.",
                    ctx.cluster.name
                ))
            })
    }

    /// The control plane's Kubernetes version as the management cluster has it.
    async fn live_control_plane_version(
        &self,
        ctx: &ClusterContext,
    ) -> DriverResult<Option<String>> {
        let name = control_plane_name(&cluster_name(&ctx.cluster.uuid));
        let kcp = self
            .management()
            .await?
            .get(
                self.capi.control_plane(),
                "KubeadmControlPlane",
                Some(self.ns()),
                &name,
            )
            .await?;
        Ok(kcp.and_then(|k| k["spec"]["version"].as_str().map(str::to_string)))
    }

    async fn observed(&self, ctx: &ClusterContext) -> DriverResult<Observed> {
        let mgmt = self.management().await?;
        let name = cluster_name(&ctx.cluster.uuid);
        let ns = Some(self.ns());
        let cluster = mgmt.get(self.capi.core(), "Cluster", ns, &name).await?;
        if cluster.is_none() {
            return Ok(Observed::default());
        }
        let control_plane = mgmt
            .get(
                self.capi.control_plane(),
                "KubeadmControlPlane",
                ns,
                &control_plane_name(&name),
            )
            .await?;
        let selector = format!("{LABEL_CLUSTER_UUID}={}", ctx.cluster.uuid);
        let deployments: BTreeMap<String, Value> = mgmt
            .list(self.capi.core(), "MachineDeployment", ns, &selector)
            .await?
            .into_iter()
            .filter_map(|d| {
                d["metadata"]["name"]
                    .as_str()
                    .map(str::to_string)
                    .map(|n| (n, d))
            })
            .collect();
        let machines = mgmt
            .list(
                self.capi.core(),
                "Machine",
                ns,
                &format!("{CAPI_CLUSTER_NAME_LABEL}={name}"),
            )
            .await?;
        Ok(Observed {
            cluster,
            control_plane,
            deployments,
            machines,
        })
    }

    async fn host_access(&self, ctx: &FederationContext) -> DriverResult<Option<ClusterAccess>> {
        match &ctx.host {
            Some(host) => self.cluster_access(&host.cluster).await.map(Some),
            None => Ok(None),
        }
    }
}

/// The version an upgrade asks for: the new template's `kube_tag`.
fn target_version(template: &ClusterTemplate) -> DriverResult<String> {
    template
        .spec
        .labels
        .get("kube_tag")
        .filter(|v| !v.trim().is_empty())
        .map(|v| normalize_version(v))
        .ok_or_else(|| {
            DriverError::Permanent(format!(
                "The cluster template {} has no kube_tag label, so it names no Kubernetes version to upgrade to.",
                template.spec.name
            ))
        })
}

/// `(major, minor, patch)` of `v1.30.1`; `None` when unparsable.
fn semver(v: &str) -> Option<(u64, u64, u64)> {
    let core = v.trim().trim_start_matches('v');
    let core = core.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    Some((
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
        parts.next().flatten().unwrap_or(0),
    ))
}

#[async_trait]
impl Driver for KubernetesDriver {
    fn name(&self) -> &'static str {
        "kubernetes"
    }

    fn provides(&self) -> &[Provides] {
        PROVIDES
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            federation: true,
            // Cluster API keeps the CA in the <cluster>-ca Secret and offers no rotation; the
            // driver does not do one of its own yet.
            rotate_ca: false,
            rotate_credential: false,
            // KubeadmControlPlane replicas; always odd (validate_master_size).
            master_resize: true,
            upgrade: true,
        }
    }

    async fn create_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        for ng in &ctx.nodegroups {
            self.within_limit(ctx, ng, ng.node_count)?;
        }
        let renderer = Renderer::new(&self.settings, ctx);
        let mut objects = ctx
            .ca
            .as_ref()
            .map(|ca| renderer.ca_secrets(ca))
            .unwrap_or_default();
        objects.extend(renderer.all().map_err(DriverError::Permanent)?);
        self.apply_all(&objects).await?;
        Ok(Self::started(ctx))
    }

    async fn update_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        let groups = ctx
            .nodegroups
            .iter()
            .filter(|ng| ng.status != ClusterStatus::DeleteInProgress);
        for ng in groups.clone() {
            self.within_limit(ctx, ng, ng.node_count)?;
        }
        for ng in groups {
            self.scale(ctx, ng, ng.node_count).await?;
        }
        Ok(Self::started(ctx))
    }

    async fn resize_cluster(
        &self,
        ctx: &ClusterContext,
        resize: &Resize,
    ) -> DriverResult<Progress> {
        let ng = Self::find_group(ctx, &resize.nodegroup)?;
        self.within_limit(ctx, ng, resize.node_count)?;
        if ng.is_master() {
            self.validate_master_size(resize.node_count)
                .map_err(DriverError::Permanent)?;
        } else if resize.node_count < 0 {
            return Err(DriverError::Permanent(format!(
                "The node count of node group {} cannot be negative.",
                ng.name
            )));
        }
        if !resize.nodes_to_remove.is_empty() {
            self.mark_for_deletion(ctx, ng, resize).await?;
        }
        self.scale(ctx, ng, resize.node_count).await?;
        Ok(Self::started(ctx))
    }

    async fn upgrade_cluster(
        &self,
        ctx: &ClusterContext,
        template: &ClusterTemplate,
        max_batch_size: i32,
        nodegroup: Option<&str>,
    ) -> DriverResult<Progress> {
        let version = target_version(template)?;
        let overrides = Overrides {
            version: Some(version.clone()),
            image: Some(template.spec.image_id.clone()),
            max_surge: Some(max_batch_size.max(1)),
        };
        let renderer = Renderer {
            settings: &self.settings,
            ctx,
            template,
        };
        let groups: Vec<&NodeGroup> = match nodegroup {
            Some(id) => vec![Self::find_group(ctx, id)?],
            None => ctx.nodegroups.iter().collect(),
        };
        for ng in &groups {
            self.within_limit(ctx, ng, ng.node_count)?;
        }
        if !groups.iter().any(|ng| ng.is_master()) {
            // Workers may not run a newer kubelet than the control plane.
            let control_plane = self.live_control_plane_version(ctx).await?;
            if let (Some(cp), Some(target)) =
                (control_plane.as_deref().and_then(semver), semver(&version))
            {
                if target > cp {
                    return Err(DriverError::Permanent(format!(
                        "Upgrade the master node group first: the control plane runs {}, older than {version}.",
                        control_plane.unwrap_or_default()
                    )));
                }
            }
        }
        let mut objects = Vec::new();
        if let Some(master) = groups.iter().find(|ng| ng.is_master()) {
            objects.extend(
                renderer
                    .control_plane(master, &overrides)
                    .map_err(DriverError::Permanent)?,
            );
        }
        for ng in groups.iter().filter(|ng| !ng.is_master()) {
            objects.extend(
                renderer
                    .worker(ng, &overrides, None)
                    .map_err(DriverError::Permanent)?,
            );
        }
        self.apply_all(&objects).await?;
        Ok(Self::started(ctx))
    }

    async fn delete_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        let name = cluster_name(&ctx.cluster.uuid);
        let cluster_object = || vec![Leftover::new("Cluster.cluster.x-k8s.io", name.clone())];
        let deleted = match self.management().await {
            Ok(mgmt) => {
                mgmt.delete(self.capi.core(), "Cluster", Some(self.ns()), &name)
                    .await
            }
            Err(e) => Err(e),
        };
        let existed = deleted.map_err(|e| e.leaving(cluster_object()))?;
        if existed {
            let mut obs = ClusterObservation::phase(Phase::InProgress);
            obs.stack_id = Some(name.clone());
            obs.leftovers = cluster_object();
            return Ok(Progress::Started(obs));
        }
        self.remove_leftovers(ctx).await?;
        Ok(Progress::Done(ClusterObservation::phase(Phase::Gone)))
    }

    async fn create_nodegroup(
        &self,
        ctx: &ClusterContext,
        nodegroup: &NodeGroup,
    ) -> DriverResult<Progress> {
        if nodegroup.is_master() {
            return Err(DriverError::Permanent(
                "The kubernetes driver runs one control plane per cluster (the KubeadmControlPlane of the master node group); add worker node groups only.".into(),
            ));
        }
        self.within_limit(ctx, nodegroup, nodegroup.node_count)?;
        let version = self.live_control_plane_version(ctx).await?;
        let objects = Renderer::new(&self.settings, ctx)
            .worker(nodegroup, &Overrides::default(), version.as_deref())
            .map_err(DriverError::Permanent)?;
        self.apply_all(&objects).await?;
        Ok(Self::started(ctx))
    }

    async fn update_nodegroup(
        &self,
        ctx: &ClusterContext,
        nodegroup: &NodeGroup,
    ) -> DriverResult<Progress> {
        self.scale(ctx, nodegroup, nodegroup.node_count).await?;
        Ok(Self::started(ctx))
    }

    async fn delete_nodegroup(
        &self,
        ctx: &ClusterContext,
        nodegroup: &NodeGroup,
    ) -> DriverResult<Progress> {
        if nodegroup.is_master() {
            return Err(DriverError::Permanent(
                "The master node group cannot be deleted.".into(),
            ));
        }
        let name = deployment_name(&cluster_name(&ctx.cluster.uuid), nodegroup);
        self.management()
            .await?
            .delete(
                self.capi.core(),
                "MachineDeployment",
                Some(self.ns()),
                &name,
            )
            .await?;
        Ok(Self::started(ctx))
    }

    async fn cluster_status(&self, ctx: &ClusterContext) -> DriverResult<ClusterObservation> {
        let observed = self.observed(ctx).await?;
        let observation = status::observe(ctx, &observed);
        if observation.phase == Phase::Gone {
            self.remove_leftovers(ctx).await?;
        }
        Ok(observation)
    }

    async fn cluster_health(
        &self,
        ctx: &ClusterContext,
    ) -> DriverResult<Option<HealthObservation>> {
        if !ctx.cluster.status.is_complete_like() {
            return Ok(None);
        }
        let observed = self.observed(ctx).await?;
        Ok(Some(status::health(
            observed.cluster.as_ref(),
            &observed.machines,
        )))
    }

    async fn rotate_ca(&self, _ctx: &ClusterContext) -> DriverResult<Progress> {
        Err(DriverError::Permanent(
            "The kubernetes driver cannot rotate cluster CAs yet: Cluster API keeps the CA in the <cluster>-ca Secret and has no rotation of its own.".into(),
        ))
    }

    fn plan_machine_change(&self, m: &Machine, next: &MachineSpec) -> Result<ChangeMode, String> {
        machines::plan_change(m, next)
    }

    fn check_machine_action(&self, m: &Machine, action: MachineAction) -> Result<(), String> {
        machines::check_action(m, action)
    }

    async fn update_machine(
        &self,
        ctx: &ClusterContext,
        m: &Machine,
        mode: ChangeMode,
    ) -> DriverResult<Progress> {
        match mode {
            ChangeMode::Replace => self.replace(ctx, m).await,
            ChangeMode::InPlace => Err(machines::in_place_refused()),
        }
    }

    async fn replace_machine(&self, ctx: &ClusterContext, m: &Machine) -> DriverResult<Progress> {
        self.replace(ctx, m).await
    }

    fn rolls_whole_group(&self, ng: &NodeGroup) -> bool {
        ng.is_master()
    }

    async fn roll_nodegroup(
        &self,
        ctx: &ClusterContext,
        ng: &NodeGroup,
        rolling: &[Machine],
    ) -> DriverResult<Progress> {
        self.roll_control_plane(ctx, ng, rolling).await
    }

    async fn reboot_machine(&self, ctx: &ClusterContext, m: &Machine) -> DriverResult<Progress> {
        self.reboot(ctx, m).await
    }

    async fn create_federation(&self, ctx: &FederationContext) -> DriverResult<FederationProgress> {
        let Some(host) = self.host_access(ctx).await? else {
            return Err(DriverError::Permanent(format!(
                "The host cluster {} no longer exists.",
                ctx.federation.hostcluster_id
            )));
        };
        self.engine
            .ensure_control_plane(&host, &ctx.federation)
            .await
    }

    async fn update_federation(
        &self,
        ctx: &FederationContext,
        change: &MemberChange,
    ) -> DriverResult<FederationProgress> {
        let fed = &ctx.federation;
        let Some(host) = self.host_access(ctx).await? else {
            return Err(DriverError::Permanent(format!(
                "The host cluster {} no longer exists, so federation {} cannot change its members.",
                fed.hostcluster_id, fed.name
            )));
        };
        let mut notes = Vec::new();
        for id in &change.unjoined {
            let member_name = cluster_name(id);
            let access = match ctx.members.iter().find(|c| c.uuid == *id) {
                Some(cluster) => self
                    .cluster_access(cluster)
                    .await
                    .map_err(|e| e.to_string()),
                None => Err(format!("the cluster {id} no longer exists")),
            };
            if let Some(note) = self
                .engine
                .unjoin(
                    &host,
                    fed,
                    &member_name,
                    access.as_ref().map_err(Clone::clone),
                )
                .await?
            {
                notes.push(note);
            }
        }
        // Every member that exists is joined, even when another one is gone: the job applies
        // as much of its change as it can and then names every member it could not join.
        let mut missing = Vec::new();
        for id in &change.joined {
            let Some(cluster) = ctx.members.iter().find(|c| c.uuid == *id) else {
                missing.push(id.to_string());
                continue;
            };
            let member = self.cluster_access(cluster).await?;
            self.engine.join(&host, fed, &member).await?;
        }
        if !missing.is_empty() {
            let missing: Vec<&str> = missing.iter().map(String::as_str).collect();
            return Err(DriverError::Permanent(super::missing_members(&missing)));
        }
        Ok(if notes.is_empty() {
            FederationProgress::Done
        } else {
            FederationProgress::DoneWithNote(notes.join(" "))
        })
    }

    async fn delete_federation(&self, ctx: &FederationContext) -> DriverResult<FederationProgress> {
        let fed = &ctx.federation;
        let Some(host_ctx) = &ctx.host else {
            return Ok(FederationProgress::DoneWithNote(format!(
                "The host cluster {} no longer exists; the federation control plane went with it.",
                fed.hostcluster_id
            )));
        };
        let host = match self.cluster_access(&host_ctx.cluster).await {
            Ok(host) => host,
            Err(DriverError::Permanent(why)) => {
                return Ok(FederationProgress::DoneWithNote(format!(
                    "The host cluster cannot be reached, so nothing was removed from it: {why}"
                )))
            }
            Err(e) => return Err(e),
        };
        let owned = self.engine.owns_control_plane(fed);
        if owned && self.engine.control_plane_phase(&host, fed, true).await? == Phase::Gone {
            // A retry after the control plane went away: nothing is registered any more.
            return Ok(FederationProgress::Done);
        }
        let mut notes = Vec::new();
        for id in &fed.member_ids {
            let member_name = cluster_name(id);
            let access = match ctx.members.iter().find(|c| c.uuid == *id) {
                Some(cluster) => self
                    .cluster_access(cluster)
                    .await
                    .map_err(|e| e.to_string()),
                None => Err(format!("the cluster {id} no longer exists")),
            };
            match self
                .engine
                .unjoin(
                    &host,
                    fed,
                    &member_name,
                    access.as_ref().map_err(Clone::clone),
                )
                .await
            {
                Ok(Some(note)) => notes.push(note),
                Ok(None) => {}
                // The control plane and its registrations go away together.
                Err(e) if owned => notes.push(format!("Unjoining {member_name} failed: {e}")),
                Err(e) => return Err(e),
            }
        }
        for note in &notes {
            tracing::warn!(federation = %fed.uuid, note = %note, "federation delete: best-effort clean-up incomplete");
        }
        let progress = self.engine.remove_control_plane(&host, fed).await?;
        Ok(match progress {
            FederationProgress::Done if !notes.is_empty() => {
                FederationProgress::DoneWithNote(notes.join(" "))
            }
            other => other,
        })
    }

    async fn federation_status(&self, ctx: &FederationContext) -> DriverResult<Phase> {
        let fed = &ctx.federation;
        let deleting = fed.status == FederationStatus::DeleteInProgress;
        if fed.status == FederationStatus::UpdateInProgress {
            return Ok(Phase::Complete);
        }
        let host = match self.host_access(ctx).await {
            Ok(Some(host)) => host,
            Ok(None) if deleting => return Ok(Phase::Gone),
            Ok(None) => {
                return Ok(Phase::Failed(format!(
                    "The host cluster {} no longer exists.",
                    fed.hostcluster_id
                )))
            }
            Err(DriverError::Permanent(_)) if deleting => return Ok(Phase::Gone),
            Err(e) => return Err(e),
        };
        self.engine.control_plane_phase(&host, fed, deleting).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_as_semver() {
        assert!(semver("v1.30.1") > semver("v1.29.9"));
        assert_eq!(semver("1.30"), Some((1, 30, 0)));
        assert_eq!(semver("v1.31.0-rc.1"), Some((1, 31, 0)));
        assert_eq!(semver("latest"), None);
    }

    #[test]
    fn an_unset_kubeconfig_or_unknown_engine_is_refused_by_name() {
        let err = KubernetesDriver::new(KubernetesDriverSection::default()).expect_err("unset");
        assert_eq!(err, "[kubernetes_driver] kubeconfig: not set");
        let err = KubernetesDriver::new(KubernetesDriverSection {
            kubeconfig: "/nonexistent/kubeconfig".into(),
            ..KubernetesDriverSection::default()
        })
        .expect_err("missing file");
        assert!(
            err.starts_with("[kubernetes_driver] kubeconfig: cannot read /nonexistent/kubeconfig"),
            "{err}"
        );
    }
}
