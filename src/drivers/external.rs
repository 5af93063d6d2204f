//! `external`: the driver of clusters registered through the cluster registry. They run
//! elsewhere and were not provisioned here, so creating, updating and deleting them touches
//! nothing outside the database; resizing, upgrading, node groups and CA rotation are refused,
//! and they host no federation (they may be members of one).

use async_trait::async_trait;

use super::{
    Capabilities, ClusterContext, ClusterObservation, Driver, DriverError, DriverResult,
    FederationContext, FederationProgress, HealthObservation, MemberChange, Phase, Progress,
    Provides, Resize,
};
use crate::domain::cluster::NodeGroup;
use crate::domain::registry::EXTERNAL_DRIVER;
use crate::domain::template::ClusterTemplate;

/// The sentence every refused operation answers.
pub const NOT_PROVISIONED: &str =
    "The cluster is registered, not provisioned by this service: it cannot be resized, upgraded, given node groups or have its CA rotated here.";

const PROVIDES: &[Provides] = &[];

#[derive(Debug, Default)]
pub struct ExternalDriver;

fn refused<T>() -> DriverResult<T> {
    Err(DriverError::Permanent(NOT_PROVISIONED.into()))
}

fn observed(ctx: &ClusterContext, phase: Phase) -> ClusterObservation {
    ClusterObservation {
        api_address: ctx.cluster.api_address.clone(),
        coe_version: ctx.cluster.coe_version.clone(),
        ..ClusterObservation::phase(phase)
    }
}

#[async_trait]
impl Driver for ExternalDriver {
    fn name(&self) -> &'static str {
        EXTERNAL_DRIVER
    }

    fn provides(&self) -> &[Provides] {
        PROVIDES
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            federation: false,
            rotate_ca: false,
            rotate_credential: false,
            master_resize: false,
            upgrade: false,
        }
    }

    async fn create_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        Ok(Progress::Done(observed(ctx, Phase::Complete)))
    }

    async fn update_cluster(&self, ctx: &ClusterContext) -> DriverResult<Progress> {
        Ok(Progress::Done(observed(ctx, Phase::Complete)))
    }

    async fn resize_cluster(&self, _: &ClusterContext, _: &Resize) -> DriverResult<Progress> {
        refused()
    }

    async fn upgrade_cluster(
        &self,
        _: &ClusterContext,
        _: &ClusterTemplate,
        _: i32,
        _: Option<&str>,
    ) -> DriverResult<Progress> {
        refused()
    }

    async fn delete_cluster(&self, _: &ClusterContext) -> DriverResult<Progress> {
        Ok(Progress::Done(ClusterObservation::phase(Phase::Gone)))
    }

    async fn create_nodegroup(&self, _: &ClusterContext, _: &NodeGroup) -> DriverResult<Progress> {
        refused()
    }

    async fn update_nodegroup(&self, _: &ClusterContext, _: &NodeGroup) -> DriverResult<Progress> {
        refused()
    }

    async fn delete_nodegroup(&self, _: &ClusterContext, _: &NodeGroup) -> DriverResult<Progress> {
        refused()
    }

    async fn cluster_status(&self, ctx: &ClusterContext) -> DriverResult<ClusterObservation> {
        Ok(observed(ctx, Phase::Complete))
    }

    /// Health comes from the conductor's prober, not from a backend.
    async fn cluster_health(&self, _: &ClusterContext) -> DriverResult<Option<HealthObservation>> {
        Ok(None)
    }

    async fn rotate_ca(&self, _: &ClusterContext) -> DriverResult<Progress> {
        refused()
    }

    async fn create_federation(&self, _: &FederationContext) -> DriverResult<FederationProgress> {
        refused()
    }

    async fn update_federation(
        &self,
        _: &FederationContext,
        _: &MemberChange,
    ) -> DriverResult<FederationProgress> {
        refused()
    }

    async fn delete_federation(&self, _: &FederationContext) -> DriverResult<FederationProgress> {
        refused()
    }

    async fn federation_status(&self, _: &FederationContext) -> DriverResult<Phase> {
        Ok(Phase::Complete)
    }
}
