//! Node-group sizes on the management cluster: replicas and autoscaler bounds, machines marked
//! for deletion, and what a deleted cluster's owner references left behind.

use serde_json::json;

use crate::domain::cluster::NodeGroup;
use crate::domain::machine::count;

use super::render::{
    cluster_name, control_plane_name, deployment_name, Overrides, Renderer, AUTOSCALER_MAX,
    AUTOSCALER_MIN, CAPI_CLUSTER_NAME_LABEL, DELETE_MACHINE, LABEL_CLUSTER_UUID,
};
use super::status::{self};
use crate::drivers::{ClusterContext, Driver, DriverError, DriverResult, Resize};

use super::KubernetesDriver;

impl KubernetesDriver {
    /// Sets a node group's replicas (and autoscaler bounds) on its KCP or MachineDeployment.
    pub(super) async fn scale(
        &self,
        ctx: &ClusterContext,
        ng: &NodeGroup,
        count: i32,
    ) -> DriverResult<()> {
        self.within_limit(ctx, ng, count)?;
        let mgmt = self.management().await?;
        let cluster = cluster_name(&ctx.cluster.uuid);
        let (api, kind, name, patch) = if ng.is_master() {
            self.validate_master_size(count)
                .map_err(DriverError::Permanent)?;
            (
                self.capi.control_plane(),
                "KubeadmControlPlane",
                control_plane_name(&cluster),
                json!({"spec": {"replicas": count}}),
            )
        } else {
            let max = ng.max_node_count.unwrap_or(count).max(count);
            let min = ng.min_node_count.min(count);
            (
                self.capi.core(),
                "MachineDeployment",
                deployment_name(&cluster, ng),
                json!({
                    "metadata": {"annotations": {AUTOSCALER_MIN: min.to_string(), AUTOSCALER_MAX: max.to_string()}},
                    "spec": {"replicas": count},
                }),
            )
        };
        if mgmt
            .merge_patch(api, kind, Some(self.ns()), &name, &patch)
            .await?
            .is_some()
        {
            return Ok(());
        }
        if ng.is_master() {
            return Err(DriverError::Permanent(format!(
                "The KubeadmControlPlane {name} of cluster {} is missing from the management cluster.",
                ctx.cluster.name
            )));
        }
        // A worker group without its MachineDeployment (added while the cluster was busy):
        // create it at the control plane's version.
        let version = self.live_control_plane_version(ctx).await?;
        let mut group = ng.clone();
        group.node_count = count;
        let objects = Renderer::new(&self.settings, ctx)
            .worker(&group, &Overrides::default(), version.as_deref())
            .map_err(DriverError::Permanent)?;
        self.apply_all(&objects).await
    }

    /// Marks the machines named in `nodes_to_remove` for deletion by Cluster API.
    pub(super) async fn mark_for_deletion(
        &self,
        ctx: &ClusterContext,
        ng: &NodeGroup,
        resize: &Resize,
    ) -> DriverResult<()> {
        let mgmt = self.management().await?;
        let cluster = cluster_name(&ctx.cluster.uuid);
        let selector = format!("{CAPI_CLUSTER_NAME_LABEL}={cluster}");
        let machines = mgmt
            .list(self.capi.core(), "Machine", Some(self.ns()), &selector)
            .await?;
        let deployment = deployment_name(&cluster, ng);
        let group = status::capi_machines_of(&cluster, ng, &machines);
        let paired = status::pair(&status::rows_of(ctx, ng), &group);
        let mut unmatched = Vec::new();
        for wanted in &resize.nodes_to_remove {
            // The Machine the name names, else the Machine of the Fleetyard machine it names.
            let found = group
                .iter()
                .copied()
                .find(|m| status::machine_matches(m, wanted))
                .or_else(|| {
                    paired
                        .iter()
                        .find(|(row, _)| count::names_machine(row, wanted))
                        .map(|(_, m)| *m)
                });
            let Some(machine) = found else {
                unmatched.push(wanted.as_str());
                continue;
            };
            let name = machine["metadata"]["name"].as_str().unwrap_or_default();
            if machine["metadata"]["annotations"][DELETE_MACHINE].is_string() {
                continue;
            }
            let patch = json!({"metadata": {"annotations": {DELETE_MACHINE: "yes"}}});
            mgmt.merge_patch(self.capi.core(), "Machine", Some(self.ns()), name, &patch)
                .await?;
        }
        if unmatched.is_empty() {
            return Ok(());
        }
        // A retry after the scale-down went through finds the removed machines gone.
        let (api, kind, name) = if ng.is_master() {
            (
                self.capi.control_plane(),
                "KubeadmControlPlane",
                control_plane_name(&cluster),
            )
        } else {
            (self.capi.core(), "MachineDeployment", deployment)
        };
        let live = mgmt.get(api, kind, Some(self.ns()), &name).await?;
        if live.and_then(|o| o["spec"]["replicas"].as_i64()) == Some(i64::from(resize.node_count)) {
            return Ok(());
        }
        let known: Vec<String> = group
            .iter()
            .map(|m| {
                m["status"]["nodeRef"]["name"]
                    .as_str()
                    .or_else(|| m["metadata"]["name"].as_str())
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        Err(DriverError::Permanent(format!(
            "nodes_to_remove names {}, which {} not a node of node group {} (its nodes: {}).",
            unmatched.join(", "),
            if unmatched.len() == 1 { "is" } else { "are" },
            ng.name,
            if known.is_empty() {
                "none yet".to_string()
            } else {
                known.join(", ")
            }
        )))
    }

    /// Deletes whatever labelled objects of a deleted cluster owner references left behind.
    pub(super) async fn remove_leftovers(&self, ctx: &ClusterContext) -> DriverResult<()> {
        let mgmt = self.management().await?;
        let selector = format!("{LABEL_CLUSTER_UUID}={}", ctx.cluster.uuid);
        let s = &self.settings;
        let kinds = [
            (self.capi.core(), "MachineDeployment"),
            (self.capi.control_plane(), "KubeadmControlPlane"),
            (self.capi.bootstrap(), "KubeadmConfigTemplate"),
            (
                s.infrastructure_api_version.as_str(),
                s.infrastructure_machine_template_kind.as_str(),
            ),
            (
                s.infrastructure_api_version.as_str(),
                s.infrastructure_cluster_kind.as_str(),
            ),
            // The CA Secrets Fleetyard handed to Cluster API.
            ("v1", "Secret"),
        ];
        for (api, kind) in kinds {
            for obj in mgmt.list(api, kind, Some(self.ns()), &selector).await? {
                if let Some(name) = obj["metadata"]["name"].as_str() {
                    mgmt.delete(api, kind, Some(self.ns()), name).await?;
                }
            }
        }
        Ok(())
    }
}
