//! Every operation of `/v1` (and the root document), as the OpenAPI document lists it. The
//! functions are descriptions only: the handlers are routed in each resource module's
//! `configure`, and the integration test `openapi` drives every operation listed here against
//! the running service and validates the response with these schemas.

#![allow(dead_code)]

use utoipa::IntoParams;

use super::requests::{
    CertificateSignRequest, ClusterCreateRequest, ClusterGroupBindingRequest,
    ClusterGroupCreateRequest, ClusterGroupMemberRequest, ClusterResizeRequest,
    ClusterTemplateCreateRequest, ClusterUpgradeRequest, FederationCreateRequest,
    MachineActionRequest, MachineCreateRequest, NodeGroupCreateRequest, PatchOperation,
    QuotaRequest,
};
use crate::api::v1::views::{
    AcceptedView, CertificateView, ClusterCollection, ClusterDetailCollection,
    ClusterGroupBindingCollection, ClusterGroupBindingView, ClusterGroupCollection,
    ClusterGroupMemberCollection, ClusterGroupMemberView, ClusterGroupView,
    ClusterTemplateCollection, ClusterTemplateView, ClusterView, FederationCollection,
    FederationDetailCollection, FederationView, MachineCollection, MachineView, MserviceCollection,
    NodeGroupCollection, NodeGroupDetailCollection, NodeGroupView, QuotaCollection, QuotaShowView,
    QuotaView, RootView, SignedCertificateView, StatsView, V1View,
};

/// Keyset pagination of list endpoints.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// The uuid of the last item of the previous page.
    marker: Option<String>,
    /// At most this many items (clamped to `[api] max_limit`).
    limit: Option<u32>,
    /// A sortable column; `id` when absent.
    sort_key: Option<String>,
    /// `asc` (default) or `desc`.
    sort_dir: Option<String>,
}

/// Pagination of `GET /v1/clusters/{cluster_ident}/nodegroups`, and its role filter.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NodeGroupListParams {
    marker: Option<String>,
    limit: Option<u32>,
    sort_key: Option<String>,
    sort_dir: Option<String>,
    /// Only node groups of this role.
    role: Option<String>,
}

/// Pagination of `GET /v1/clusters/{cluster_ident}/machines`, and its filters.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MachineListParams {
    /// The uuid of the last machine of the previous page (any machine of the cluster).
    marker: Option<String>,
    limit: Option<u32>,
    /// `id` (default), `uuid`, `name`, `role`, `nodegroup_id`, `phase`, `provider_id`,
    /// `created_at` or `updated_at`.
    sort_key: Option<String>,
    sort_dir: Option<String>,
    /// Only machines of this node group of the cluster (uuid or name; unknown is a 404).
    nodegroup: Option<String>,
    /// Only machines of this role: `master` or `worker`.
    role: Option<String>,
    /// Only machines in this phase: `Pending`, `Provisioning`, `Running`, `Deleting` or `Failed`.
    phase: Option<String>,
}

/// Pagination of `GET /v1/quotas` (the marker is a quota id), and every project's quotas.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct QuotaListParams {
    marker: Option<i64>,
    limit: Option<u32>,
    sort_key: Option<String>,
    sort_dir: Option<String>,
    /// Admins only: every project's quotas.
    all_tenants: Option<bool>,
}

// Version discovery.

#[utoipa::path(get, path = "/", tag = "versions", operation_id = "getVersions",
    security(()),
    responses((status = 200, description = "The API versions", body = RootView)))]
pub fn versions() {}

#[utoipa::path(get, path = "/v1", tag = "versions", operation_id = "getV1",
    security(()),
    responses((status = 200, description = "The v1 document", body = V1View)))]
pub fn v1() {}

#[utoipa::path(get, path = "/v1/openapi.json", tag = "versions", operation_id = "getOpenApi",
    security(()),
    responses((status = 200, description = "This document", body = serde_json::Value)))]
pub fn openapi() {}

// Cluster templates.

#[utoipa::path(get, path = "/v1/clustertemplates", tag = "clustertemplates",
    operation_id = "listClusterTemplates", params(PageParams),
    responses((status = 200, description = "Templates", body = ClusterTemplateCollection)))]
pub fn list_cluster_templates() {}

#[utoipa::path(get, path = "/v1/clustertemplates/detail", tag = "clustertemplates",
    operation_id = "listClusterTemplatesDetail", params(PageParams),
    responses((status = 200, description = "Templates", body = ClusterTemplateCollection)))]
pub fn list_cluster_templates_detail() {}

// The create operations link to show, update and delete with the new uuid, so stateful
// clients (schemathesis) can follow create -> show -> patch -> delete.
#[utoipa::path(post, path = "/v1/clustertemplates", tag = "clustertemplates",
    operation_id = "createClusterTemplate", request_body = ClusterTemplateCreateRequest,
    responses((status = 201, description = "Created", body = ClusterTemplateView,
        headers(("Location" = String, description = "The template's URL")),
        links(
            ("show" = (operation_id = "showClusterTemplate", parameters(("clustertemplate_ident" = "$response.body#/uuid")))),
            ("update" = (operation_id = "updateClusterTemplate", parameters(("clustertemplate_ident" = "$response.body#/uuid")))),
            ("delete" = (operation_id = "deleteClusterTemplate", parameters(("clustertemplate_ident" = "$response.body#/uuid"))))))))]
pub fn create_cluster_template() {}

#[utoipa::path(get, path = "/v1/clustertemplates/{clustertemplate_ident}",
    tag = "clustertemplates", operation_id = "showClusterTemplate",
    params(("clustertemplate_ident" = String, Path, description = "Uuid or name")),
    responses((status = 200, description = "The template", body = ClusterTemplateView)))]
pub fn show_cluster_template() {}

#[utoipa::path(patch, path = "/v1/clustertemplates/{clustertemplate_ident}",
    tag = "clustertemplates", operation_id = "updateClusterTemplate",
    params(("clustertemplate_ident" = String, Path, description = "Uuid or name")),
    request_body = Vec<PatchOperation>,
    responses((status = 200, description = "The updated template", body = ClusterTemplateView)))]
pub fn update_cluster_template() {}

#[utoipa::path(delete, path = "/v1/clustertemplates/{clustertemplate_ident}",
    tag = "clustertemplates", operation_id = "deleteClusterTemplate",
    params(("clustertemplate_ident" = String, Path, description = "Uuid or name")),
    responses((status = 204, description = "Deleted")))]
pub fn delete_cluster_template() {}

// Clusters.

#[utoipa::path(get, path = "/v1/clusters", tag = "clusters", operation_id = "listClusters",
    params(PageParams),
    responses((status = 200, description = "Cluster summaries", body = ClusterCollection)))]
pub fn list_clusters() {}

#[utoipa::path(get, path = "/v1/clusters/detail", tag = "clusters",
    operation_id = "listClustersDetail", params(PageParams),
    responses((status = 200, description = "Clusters", body = ClusterDetailCollection)))]
pub fn list_clusters_detail() {}

#[utoipa::path(post, path = "/v1/clusters", tag = "clusters", operation_id = "createCluster",
    request_body = ClusterCreateRequest,
    responses((status = 202, description = "Accepted; the cluster is CREATE_IN_PROGRESS",
        body = AcceptedView,
        links(
            ("show" = (operation_id = "showCluster", parameters(("cluster_ident" = "$response.body#/uuid")))),
            ("update" = (operation_id = "updateCluster", parameters(("cluster_ident" = "$response.body#/uuid")))),
            ("delete" = (operation_id = "deleteCluster", parameters(("cluster_ident" = "$response.body#/uuid"))))))))]
pub fn create_cluster() {}

#[utoipa::path(get, path = "/v1/clusters/{cluster_ident}", tag = "clusters",
    operation_id = "showCluster",
    params(("cluster_ident" = String, Path, description = "Uuid or name")),
    responses((status = 200, description = "The cluster", body = ClusterView)))]
pub fn show_cluster() {}

#[utoipa::path(patch, path = "/v1/clusters/{cluster_ident}", tag = "clusters",
    operation_id = "updateCluster",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("rollback" = Option<bool>, Query, description = "Microversion 1.3 and later")),
    request_body = Vec<PatchOperation>,
    responses((status = 202, description = "Accepted", body = AcceptedView)))]
pub fn update_cluster() {}

#[utoipa::path(delete, path = "/v1/clusters/{cluster_ident}", tag = "clusters",
    operation_id = "deleteCluster",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("force" = Option<bool>, Query, description = "Microversion 1.18 and later: an administrator's forced delete (cluster:delete_force); the record goes after one last best-effort clean-up")),
    responses((status = 204, description = "Accepted; the cluster is DELETE_IN_PROGRESS")))]
pub fn delete_cluster() {}

#[utoipa::path(post, path = "/v1/clusters/{cluster_ident}/actions/resize", tag = "clusters",
    operation_id = "resizeCluster",
    params(("cluster_ident" = String, Path, description = "Uuid or name")),
    request_body = ClusterResizeRequest,
    responses((status = 202, description = "Accepted (microversion 1.7)", body = AcceptedView)))]
pub fn resize_cluster() {}

#[utoipa::path(post, path = "/v1/clusters/{cluster_ident}/actions/upgrade", tag = "clusters",
    operation_id = "upgradeCluster",
    params(("cluster_ident" = String, Path, description = "Uuid or name")),
    request_body = ClusterUpgradeRequest,
    responses((status = 202, description = "Accepted (microversion 1.8)", body = AcceptedView)))]
pub fn upgrade_cluster() {}

#[utoipa::path(post, path = "/v1/clusters/{cluster_ident}/actions/retry", tag = "clusters",
    operation_id = "retryCluster",
    params(("cluster_ident" = String, Path, description = "Uuid or name")),
    responses((status = 202, description = "Accepted (microversion 1.16); the CREATE_FAILED \
        cluster is CREATE_IN_PROGRESS again", body = AcceptedView)))]
pub fn retry_cluster() {}

#[utoipa::path(post,
    path = "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/actions/retry",
    tag = "nodegroups", operation_id = "retryNodeGroup",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("nodegroup_ident" = String, Path, description = "Uuid, name or id")),
    responses((status = 202, description = "Accepted (microversion 1.17); the CREATE_FAILED \
        node group is CREATE_IN_PROGRESS again", body = AcceptedView)))]
pub fn retry_nodegroup() {}

#[utoipa::path(post, path = "/v1/federations/{federation_ident}/actions/retry",
    tag = "federations", operation_id = "retryFederation",
    params(("federation_ident" = String, Path, description = "Uuid or name")),
    responses((status = 202, description = "Accepted (microversion 1.17); the CREATE_FAILED \
        federation is CREATE_IN_PROGRESS again", body = AcceptedView)))]
pub fn retry_federation() {}

// Node groups (microversion 1.9).

#[utoipa::path(get, path = "/v1/clusters/{cluster_ident}/nodegroups", tag = "nodegroups",
    operation_id = "listNodeGroups",
    params(("cluster_ident" = String, Path, description = "Uuid or name"), NodeGroupListParams),
    responses((status = 200, description = "Node group summaries", body = NodeGroupCollection)))]
pub fn list_nodegroups() {}

#[utoipa::path(get, path = "/v1/clusters/{cluster_ident}/nodegroups/detail", tag = "nodegroups",
    operation_id = "listNodeGroupsDetail",
    params(("cluster_ident" = String, Path, description = "Uuid or name"), NodeGroupListParams),
    responses((status = 200, description = "Node groups", body = NodeGroupDetailCollection)))]
pub fn list_nodegroups_detail() {}

#[utoipa::path(post, path = "/v1/clusters/{cluster_ident}/nodegroups", tag = "nodegroups",
    operation_id = "createNodeGroup",
    params(("cluster_ident" = String, Path, description = "Uuid or name")),
    request_body = NodeGroupCreateRequest,
    responses((status = 202, description = "Accepted; the node group as stored",
        body = NodeGroupView,
        links(
            ("show" = (operation_id = "showNodeGroup", parameters(("cluster_ident" = "$request.path.cluster_ident"), ("nodegroup_ident" = "$response.body#/uuid")))),
            ("update" = (operation_id = "updateNodeGroup", parameters(("cluster_ident" = "$request.path.cluster_ident"), ("nodegroup_ident" = "$response.body#/uuid")))),
            ("delete" = (operation_id = "deleteNodeGroup", parameters(("cluster_ident" = "$request.path.cluster_ident"), ("nodegroup_ident" = "$response.body#/uuid"))))))))]
pub fn create_nodegroup() {}

#[utoipa::path(get, path = "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}",
    tag = "nodegroups", operation_id = "showNodeGroup",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("nodegroup_ident" = String, Path, description = "Uuid, name or id")),
    responses((status = 200, description = "The node group", body = NodeGroupView)))]
pub fn show_nodegroup() {}

/// Magnum's JSON-patch dialect over `min_node_count`, `max_node_count`, `node_labels` and
/// `node_taints`; from microversion 1.20 also `flavor_id` and `image_id` (with
/// `max_batch_size`), a rolling replacement of the group's machines.
#[utoipa::path(patch, path = "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}",
    tag = "nodegroups", operation_id = "updateNodeGroup",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("nodegroup_ident" = String, Path, description = "Uuid, name or id")),
    request_body = Vec<PatchOperation>,
    responses((status = 202, description = "Accepted; the node group as stored",
        body = NodeGroupView)))]
pub fn update_nodegroup() {}

#[utoipa::path(delete, path = "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}",
    tag = "nodegroups", operation_id = "deleteNodeGroup",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("nodegroup_ident" = String, Path, description = "Uuid, name or id"),
        ("force" = Option<bool>, Query, description = "Microversion 1.18 and later: an administrator's forced delete (nodegroup:delete_force); the node group's record goes after one last best-effort clean-up")),
    responses((status = 204, description = "Accepted; the node group is DELETE_IN_PROGRESS")))]
pub fn delete_nodegroup() {}

// Machines (microversion 1.19).

#[utoipa::path(get, path = "/v1/clusters/{cluster_ident}/machines", tag = "machines",
    operation_id = "listMachines",
    params(("cluster_ident" = String, Path, description = "Uuid or name"), MachineListParams),
    responses((status = 200, description = "The cluster's machines", body = MachineCollection)))]
pub fn list_machines() {}

#[utoipa::path(get, path = "/v1/clusters/{cluster_ident}/machines/{machine_ident}",
    tag = "machines", operation_id = "showMachine",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("machine_ident" = String, Path, description = "Uuid or name")),
    responses((status = 200, description = "The machine", body = MachineView)))]
pub fn show_machine() {}

#[utoipa::path(delete, path = "/v1/clusters/{cluster_ident}/machines/{machine_ident}",
    tag = "machines", operation_id = "deleteMachine",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("machine_ident" = String, Path, description = "Uuid or name")),
    responses((status = 204, description = "Accepted; the machine is Deleting and its node group one node smaller, UPDATE_IN_PROGRESS")))]
pub fn delete_machine() {}

#[utoipa::path(post, path = "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/machines",
    tag = "machines", operation_id = "createMachine",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("nodegroup_ident" = String, Path, description = "Uuid, name or id")),
    request_body = MachineCreateRequest,
    responses((status = 202, description = "Accepted (microversion 1.20); the machine is Pending and its node group one node larger, UPDATE_IN_PROGRESS", body = MachineView)))]
pub fn create_machine() {}

// One machine's changes (microversion 1.20).

#[utoipa::path(patch, path = "/v1/clusters/{cluster_ident}/machines/{machine_ident}",
    tag = "machines", operation_id = "updateMachine",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("machine_ident" = String, Path, description = "Uuid or name")),
    request_body(content = Vec<PatchOperation>, description = "Magnum's JSON patch over \
        /versions/kubelet, /container_runtime/name, /container_runtime/version and /os_image"),
    responses((status = 202, description = "Accepted (microversion 1.20); the machine is \
        Provisioning until the driver has applied the change, in place or by replacement",
        body = MachineView)))]
pub fn update_machine() {}

#[utoipa::path(post,
    path = "/v1/clusters/{cluster_ident}/machines/{machine_ident}/actions/replace",
    tag = "machines", operation_id = "replaceMachine",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("machine_ident" = String, Path, description = "Uuid or name")),
    request_body = MachineActionRequest,
    responses((status = 202, description = "Accepted (microversion 1.20); the machine is \
        Provisioning until its new machine runs and the old one is gone", body = MachineView)))]
pub fn replace_machine() {}

#[utoipa::path(post,
    path = "/v1/clusters/{cluster_ident}/machines/{machine_ident}/actions/reboot",
    tag = "machines", operation_id = "rebootMachine",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("machine_ident" = String, Path, description = "Uuid or name")),
    request_body = MachineActionRequest,
    responses((status = 202, description = "Accepted (microversion 1.20); the machine is \
        Provisioning until it has rebooted", body = MachineView)))]
pub fn reboot_machine() {}

// Federations.

#[utoipa::path(get, path = "/v1/federations", tag = "federations",
    operation_id = "listFederations", params(PageParams),
    responses((status = 200, description = "Federation summaries", body = FederationCollection)))]
pub fn list_federations() {}

#[utoipa::path(get, path = "/v1/federations/detail", tag = "federations",
    operation_id = "listFederationsDetail", params(PageParams),
    responses((status = 200, description = "Federations", body = FederationDetailCollection)))]
pub fn list_federations_detail() {}

#[utoipa::path(post, path = "/v1/federations", tag = "federations",
    operation_id = "createFederation", request_body = FederationCreateRequest,
    responses((status = 202, description = "Accepted", body = AcceptedView,
        links(
            ("show" = (operation_id = "showFederation", parameters(("federation_ident" = "$response.body#/uuid")))),
            ("update" = (operation_id = "updateFederation", parameters(("federation_ident" = "$response.body#/uuid")))),
            ("delete" = (operation_id = "deleteFederation", parameters(("federation_ident" = "$response.body#/uuid"))))))))]
pub fn create_federation() {}

#[utoipa::path(get, path = "/v1/federations/{federation_ident}", tag = "federations",
    operation_id = "showFederation",
    params(("federation_ident" = String, Path, description = "Uuid or name")),
    responses((status = 200, description = "The federation", body = FederationView)))]
pub fn show_federation() {}

#[utoipa::path(patch, path = "/v1/federations/{federation_ident}", tag = "federations",
    operation_id = "updateFederation",
    params(("federation_ident" = String, Path, description = "Uuid or name"),
        ("rollback" = Option<bool>, Query, description = "Validated, then ignored")),
    request_body = Vec<PatchOperation>,
    responses((status = 202, description = "Accepted", body = AcceptedView)))]
pub fn update_federation() {}

#[utoipa::path(delete, path = "/v1/federations/{federation_ident}", tag = "federations",
    operation_id = "deleteFederation",
    params(("federation_ident" = String, Path, description = "Uuid or name"),
        ("force" = Option<bool>, Query, description = "Microversion 1.18 and later: an administrator's forced delete (federation:delete_force); the record goes after one last best-effort clean-up")),
    responses((status = 204, description = "Accepted; the federation is DELETE_IN_PROGRESS")))]
pub fn delete_federation() {}

// Certificates and credentials.

#[utoipa::path(post, path = "/v1/certificates", tag = "certificates",
    operation_id = "signCertificate", request_body = CertificateSignRequest,
    responses((status = 201, description = "The signed certificate", body = SignedCertificateView)))]
pub fn sign_certificate() {}

#[utoipa::path(get, path = "/v1/certificates/{cluster_ident}", tag = "certificates",
    operation_id = "showCertificate",
    params(("cluster_ident" = String, Path, description = "Uuid or name"),
        ("ca_cert_type" = Option<String>, Query, description = "`etcd` or `front_proxy`")),
    responses((status = 200, description = "The CA certificate", body = CertificateView)))]
pub fn show_certificate() {}

#[utoipa::path(patch, path = "/v1/certificates/{cluster_ident}", tag = "certificates",
    operation_id = "rotateCertificateAuthority",
    params(("cluster_ident" = String, Path, description = "Uuid or name")),
    responses((status = 202, description = "Accepted", body = AcceptedView)))]
pub fn rotate_ca() {}

#[utoipa::path(patch, path = "/v1/credentials/{cluster_ident}", tag = "credentials",
    operation_id = "rotateCredential",
    params(("cluster_ident" = String, Path, description = "Uuid or name")),
    responses((status = 202, description = "Accepted (microversion 1.12)", body = AcceptedView)))]
pub fn rotate_credential() {}

// Quotas, stats, services.

#[utoipa::path(get, path = "/v1/quotas", tag = "quotas", operation_id = "listQuotas",
    params(QuotaListParams),
    responses((status = 200, description = "Quotas", body = QuotaCollection)))]
pub fn list_quotas() {}

#[utoipa::path(post, path = "/v1/quotas", tag = "quotas", operation_id = "createQuota",
    request_body = QuotaRequest,
    responses((status = 201, description = "Created", body = QuotaView)))]
pub fn create_quota() {}

#[utoipa::path(get, path = "/v1/quotas/{project_id}/{resource}", tag = "quotas",
    operation_id = "showQuota",
    params(("project_id" = String, Path), ("resource" = String, Path, description = "`Cluster`")),
    responses((status = 200, description = "The quota, or the default when the project has none",
        body = QuotaShowView)))]
pub fn show_quota() {}

#[utoipa::path(patch, path = "/v1/quotas/{project_id}/{resource}", tag = "quotas",
    operation_id = "updateQuota",
    params(("project_id" = String, Path), ("resource" = String, Path, description = "`Cluster`")),
    request_body = QuotaRequest,
    responses((status = 202, description = "The updated quota", body = QuotaView)))]
pub fn update_quota() {}

#[utoipa::path(delete, path = "/v1/quotas/{project_id}/{resource}", tag = "quotas",
    operation_id = "deleteQuota",
    params(("project_id" = String, Path), ("resource" = String, Path, description = "`Cluster`")),
    responses((status = 204, description = "Deleted")))]
pub fn delete_quota() {}

#[utoipa::path(get, path = "/v1/stats", tag = "stats", operation_id = "getStats",
    params(("project_id" = Option<String>, Query, description = "Admins: any project"),
        ("type" = Option<String>, Query, description = "`cluster`")),
    responses((status = 200, description = "Cluster and node counts", body = StatsView)))]
pub fn stats() {}

#[utoipa::path(get, path = "/v1/mservices", tag = "mservices", operation_id = "listServices",
    responses((status = 200, description = "The conductors", body = MserviceCollection)))]
pub fn list_services() {}

// Cluster groups (microversion 1.20).

#[utoipa::path(get, path = "/v1/clustergroups", tag = "clustergroups",
    operation_id = "listClusterGroups", params(PageParams),
    responses((status = 200, description = "The project's cluster groups",
        body = ClusterGroupCollection)))]
pub fn list_cluster_groups() {}

#[utoipa::path(post, path = "/v1/clustergroups", tag = "clustergroups",
    operation_id = "createClusterGroup", request_body = ClusterGroupCreateRequest,
    responses((status = 201, description = "Created", body = ClusterGroupView)))]
pub fn create_cluster_group() {}

#[utoipa::path(get, path = "/v1/clustergroups/{clustergroup_ident}", tag = "clustergroups",
    operation_id = "showClusterGroup",
    params(("clustergroup_ident" = String, Path, description = "Uuid or name")),
    responses((status = 200, description = "The cluster group", body = ClusterGroupView)))]
pub fn show_cluster_group() {}

#[utoipa::path(patch, path = "/v1/clustergroups/{clustergroup_ident}", tag = "clustergroups",
    operation_id = "updateClusterGroup",
    params(("clustergroup_ident" = String, Path, description = "Uuid or name")),
    request_body = Vec<PatchOperation>,
    responses((status = 200, description = "The changed group (description and selector \
        only)", body = ClusterGroupView)))]
pub fn update_cluster_group() {}

#[utoipa::path(delete, path = "/v1/clustergroups/{clustergroup_ident}", tag = "clustergroups",
    operation_id = "deleteClusterGroup",
    params(("clustergroup_ident" = String, Path, description = "Uuid or name")),
    responses((status = 204, description = "Deleted, with its memberships and bindings")))]
pub fn delete_cluster_group() {}

#[utoipa::path(get, path = "/v1/clustergroups/{clustergroup_ident}/members",
    tag = "clustergroups", operation_id = "listClusterGroupMembers",
    params(("clustergroup_ident" = String, Path, description = "Uuid or name")),
    responses((status = 200, description = "The group's explicit members, proposed and \
        accepted", body = ClusterGroupMemberCollection)))]
pub fn list_cluster_group_members() {}

#[utoipa::path(post, path = "/v1/clustergroups/{clustergroup_ident}/members",
    tag = "clustergroups", operation_id = "addClusterGroupMember",
    params(("clustergroup_ident" = String, Path, description = "Uuid or name")),
    request_body = ClusterGroupMemberRequest,
    responses((status = 201, description = "The membership: Accepted for a cluster of the \
        caller's project, Proposed for one of another project", body = ClusterGroupMemberView)))]
pub fn add_cluster_group_member() {}

#[utoipa::path(delete, path = "/v1/clustergroups/{clustergroup_ident}/members/{cluster_ident}",
    tag = "clustergroups", operation_id = "removeClusterGroupMember",
    params(("clustergroup_ident" = String, Path, description = "Uuid or name (uuid from the \
        cluster's side)"),
        ("cluster_ident" = String, Path, description = "Uuid or name")),
    responses((status = 204, description = "Removed (by the group's or the cluster's project)")))]
pub fn remove_cluster_group_member() {}

#[utoipa::path(post,
    path = "/v1/clustergroups/{clustergroup_ident}/members/{cluster_ident}/actions/accept",
    tag = "clustergroups", operation_id = "acceptClusterGroupMember",
    params(("clustergroup_ident" = String, Path, description = "Uuid or name (uuid from the \
        cluster's side)"),
        ("cluster_ident" = String, Path, description = "Uuid or name of a cluster of the \
        caller's project")),
    responses((status = 200, description = "The accepted membership",
        body = ClusterGroupMemberView)))]
pub fn accept_cluster_group_member() {}

#[utoipa::path(get, path = "/v1/clustergroups/{clustergroup_ident}/bindings",
    tag = "clustergroups", operation_id = "listClusterGroupBindings",
    params(("clustergroup_ident" = String, Path, description = "Uuid or name")),
    responses((status = 200, description = "The group's bindings",
        body = ClusterGroupBindingCollection)))]
pub fn list_cluster_group_bindings() {}

#[utoipa::path(post, path = "/v1/clustergroups/{clustergroup_ident}/bindings",
    tag = "clustergroups", operation_id = "createClusterGroupBinding",
    params(("clustergroup_ident" = String, Path, description = "Uuid or name")),
    request_body = ClusterGroupBindingRequest,
    responses((status = 201, description = "Created", body = ClusterGroupBindingView)))]
pub fn create_cluster_group_binding() {}

#[utoipa::path(get, path = "/v1/clustergroups/{clustergroup_ident}/bindings/{binding_id}",
    tag = "clustergroups", operation_id = "showClusterGroupBinding",
    params(("clustergroup_ident" = String, Path, description = "Uuid or name"),
        ("binding_id" = String, Path, description = "Uuid")),
    responses((status = 200, description = "The binding", body = ClusterGroupBindingView)))]
pub fn show_cluster_group_binding() {}

#[utoipa::path(delete, path = "/v1/clustergroups/{clustergroup_ident}/bindings/{binding_id}",
    tag = "clustergroups", operation_id = "deleteClusterGroupBinding",
    params(("clustergroup_ident" = String, Path, description = "Uuid or name"),
        ("binding_id" = String, Path, description = "Uuid")),
    responses((status = 204, description = "Deleted")))]
pub fn delete_cluster_group_binding() {}
