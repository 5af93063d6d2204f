//! The default rules: Magnum's (contract 7.2 and 7.3) plus Fleetyard's additions, each with
//! its description and the operations it guards (for `fleetyard policy sample`).

use super::RuleDefault;

pub(super) const ADMIN: &str = "rule:context_is_admin";
const ADMIN_OR_READER: &str = "rule:admin_or_project_reader";
const ADMIN_OR_MEMBER: &str = "rule:admin_or_project_member";
pub(super) const MEMBER_DENY_CLUSTER_USER: &str = "rule:admin_or_project_member_deny_cluster_user";
const READER_DENY_CLUSTER_USER: &str = "rule:admin_or_project_reader_deny_cluster_user";

const CLUSTERS: &str = "/v1/clusters";
const CLUSTER: &str = "/v1/clusters/{cluster_ident}";
const CLUSTERS_DETAIL: &str = "/v1/clusters/detail";
const TEMPLATES: &str = "/v1/clustertemplates";
const TEMPLATE: &str = "/v1/clustertemplates/{clustertemplate_ident}";
const TEMPLATES_DETAIL: &str = "/v1/clustertemplates/detail";
const FEDERATIONS: &str = "/v1/federations";
const FEDERATION: &str = "/v1/federations/{federation_ident}";
const FEDERATIONS_DETAIL: &str = "/v1/federations/detail";
const NODEGROUPS: &str = "/v1/clusters/{cluster_ident}/nodegroups";
const NODEGROUPS_DETAIL: &str = "/v1/clusters/{cluster_ident}/nodegroups/detail";
const NODEGROUP: &str = "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}";
const MACHINES: &str = "/v1/clusters/{cluster_ident}/machines";
const MACHINE: &str = "/v1/clusters/{cluster_ident}/machines/{machine_ident}";
const NODEGROUP_MACHINES: &str =
    "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/machines";
const KUBE_MACHINES_ALL: &str = "/apis/cluster.k8s.io/v1alpha1/machines";
const KUBE_MACHINES: &str = "/apis/cluster.k8s.io/v1alpha1/namespaces/{namespace}/machines";
const KUBE_MACHINE: &str = "/apis/cluster.k8s.io/v1alpha1/namespaces/{namespace}/machines/{name}";
const KUBE_MACHINE_STATUS: &str =
    "/apis/cluster.k8s.io/v1alpha1/namespaces/{namespace}/machines/{name}/status";
const KUBE_DEPLOYMENTS_ALL: &str = "/apis/cluster.k8s.io/v1alpha1/machinedeployments";
const KUBE_DEPLOYMENTS: &str =
    "/apis/cluster.k8s.io/v1alpha1/namespaces/{namespace}/machinedeployments";
const KUBE_DEPLOYMENT: &str =
    "/apis/cluster.k8s.io/v1alpha1/namespaces/{namespace}/machinedeployments/{name}";
const KUBE_DEPLOYMENT_SCALE: &str =
    "/apis/cluster.k8s.io/v1alpha1/namespaces/{namespace}/machinedeployments/{name}/scale";
const GROUPS: &str = "/v1/clustergroups";
const GROUP: &str = "/v1/clustergroups/{clustergroup_ident}";
const GROUP_MEMBERS: &str = "/v1/clustergroups/{clustergroup_ident}/members";
const GROUP_MEMBER: &str = "/v1/clustergroups/{clustergroup_ident}/members/{cluster_ident}";
const GROUP_MEMBER_ACCEPT: &str =
    "/v1/clustergroups/{clustergroup_ident}/members/{cluster_ident}/actions/accept";
const GROUP_BINDINGS: &str = "/v1/clustergroups/{clustergroup_ident}/bindings";
const GROUP_BINDING: &str = "/v1/clustergroups/{clustergroup_ident}/bindings/{binding_id}";
const CERTIFICATES: &str = "/v1/certificates";
const CERTIFICATE: &str = "/v1/certificates/{cluster_ident}";
const QUOTAS: &str = "/v1/quotas";
const QUOTA: &str = "/v1/quotas/{project_id}/{resource}";
const REGISTRY_ALL: &str = "/apis/clusterregistry.k8s.io/v1alpha1/clusters";
const REGISTRY: &str = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/{namespace}/clusters";
const REGISTRY_ONE: &str =
    "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/{namespace}/clusters/{name}";
const REGISTRY_STATUS: &str =
    "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/{namespace}/clusters/{name}/status";
const KUBECONFIG_ALL: &str = "/apis/clusterregistry.k8s.io/v1alpha1/kubeconfig";
const KUBECONFIG: &str = "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/{namespace}/kubeconfig";
const PROFILES_ALL: &str = "/apis/multicluster.x-k8s.io/v1alpha1/clusterprofiles";
const PROFILES: &str =
    "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/{namespace}/clusterprofiles";
const PROFILE: &str =
    "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/{namespace}/clusterprofiles/{name}";

/// `name => check string, description, [(method, path), ...];`
macro_rules! rule_table {
    ($($name:literal => $check:expr, $description:expr,
       [$(($method:literal, $path:expr)),*];)*) => {
        &[$(RuleDefault {
            name: $name,
            check_str: $check,
            description: $description,
            operations: &[$(($method, $path)),*],
        }),*]
    };
}

pub(super) static DEFAULTS: &[RuleDefault] = rule_table! {
    // ---- Base rules (7.2), referenced by the resource rules ----
    "context_is_admin" => "role:admin",
        "Decides what is required for the 'is_admin:True' check to succeed.", [];
    "admin_or_owner" => "is_admin:True or project_id:%(project_id)s",
        "Legacy: an admin, or anyone in the resource's project.", [];
    "admin_or_user" => "is_admin:True or user_id:%(user_id)s",
        "Legacy: an admin, or the user who created the resource.", [];
    "is_user" => "user_id:%(user_id)s", "The user who created the resource.", [];
    "project_member" => "role:member and project_id:%(project_id)s",
        "A member of the resource's project.", [];
    "project_reader" => "role:reader and project_id:%(project_id)s",
        "A reader of the resource's project (members and admins are readers too).", [];
    "admin_or_project_reader" => "(rule:context_is_admin) or (rule:project_reader)",
        "An admin, or a reader of the resource's project.", [];
    "admin_or_project_member" => "(rule:context_is_admin) or (rule:project_member)",
        "An admin, or a member of the resource's project.", [];
    "admin_or_project_member_user" =>
        "(rule:context_is_admin) or ((rule:project_member) and (rule:is_user))",
        "An admin, or a member of the resource's project who created the resource.", [];
    "admin_or_project_member_user_or_cluster_user" =>
        "(rule:context_is_admin) or ((rule:project_member) and (rule:is_user))",
        "Same as admin_or_project_member_user (Magnum once also allowed the cluster's \
         trustee).", [];
    "project_member_deny_cluster_user" => "(rule:project_member)",
        "A member of the resource's project (Magnum once denied the cluster's trustee).", [];
    "admin_or_project_member_deny_cluster_user" =>
        "(rule:context_is_admin) or (rule:project_member)",
        "An admin, or a member of the resource's project.", [];
    "project_reader_deny_cluster_user" => "(rule:project_reader)",
        "A reader of the resource's project.", [];
    "admin_or_project_reader_deny_cluster_user" =>
        "(rule:context_is_admin) or (rule:project_reader)",
        "An admin, or a reader of the resource's project.", [];
    "admin_or_project_reader_user" =>
        "(rule:context_is_admin) or ((rule:project_reader) and (rule:is_user))",
        "An admin, or a reader of the resource's project who created the resource.", [];

    // ---- Certificates (Fleetyard: any project member, not only the cluster's creator) ----
    "certificate:create" => ADMIN_OR_MEMBER,
        "Sign a new certificate by the cluster's CA. Fleetyard lets every member of the \
         cluster's project do this; operators can restrict it to the cluster's creator with \
         rule:admin_or_project_member_user (Magnum's default).", [("POST", CERTIFICATES)];
    "certificate:create_privileged" => ADMIN_OR_MEMBER,
        "Sign a certificate whose subject names a privileged group or user ([certificates] \
         privileged_groups and privileged_user_prefixes, such as O=system:masters): a \
         cluster-admin credential. By default, as in Magnum, the members of the cluster's \
         project and admins may, so `openstack coe cluster config` and Horizon's Get Cluster \
         Config work for them; the trade-off is that every member of the project can become \
         cluster-admin of its clusters. Operators can restrict it to admins with \
         rule:context_is_admin, or to the cluster's creator with \
         rule:admin_or_project_member_user (Magnum's certificate:create).",
        [("POST", CERTIFICATES)];
    "certificate:get" => ADMIN_OR_READER,
        "Retrieve the CA certificate of the given cluster. Fleetyard lets every reader of the \
         cluster's project do this; operators can restrict it to the cluster's creator with \
         rule:admin_or_project_member_user (or Magnum's rule:admin_or_project_reader_user).",
        [("GET", CERTIFICATE)];
    "certificate:rotate_ca" => ADMIN_OR_MEMBER,
        "Rotate the CA certificate on the given cluster.", [("PATCH", CERTIFICATE)];

    // ---- Clusters ----
    "cluster:create" => MEMBER_DENY_CLUSTER_USER, "Create a new cluster.", [("POST", CLUSTERS)];
    "cluster:delete" => MEMBER_DENY_CLUSTER_USER, "Delete a cluster.", [("DELETE", CLUSTER)];
    "cluster:delete_all_projects" => ADMIN, "Delete a cluster from any project.",
        [("DELETE", CLUSTER)];
    "cluster:delete_force" => ADMIN,
        "Force the delete of a cluster (?force=true, microversion 1.18): its record is removed after one last best-effort clean-up, whatever the driver answers.",
        [("DELETE", "/v1/clusters/{cluster_ident}?force=true")];
    "cluster:detail" => READER_DENY_CLUSTER_USER, "Retrieve a list of clusters with detail.",
        [("GET", CLUSTERS_DETAIL)];
    "cluster:detail_all_projects" => ADMIN,
        "Retrieve a list of clusters with detail across projects.", [("GET", CLUSTERS_DETAIL)];
    "cluster:get" => READER_DENY_CLUSTER_USER, "Retrieve information about the given cluster.",
        [("GET", CLUSTER)];
    "cluster:get_one_all_projects" => ADMIN,
        "Retrieve information about the given cluster across projects.", [("GET", CLUSTER)];
    "cluster:get_all" => READER_DENY_CLUSTER_USER, "Retrieve a list of clusters.",
        [("GET", CLUSTERS)];
    "cluster:get_all_all_projects" => ADMIN, "Retrieve a list of all clusters across projects.",
        [("GET", CLUSTERS)];
    "cluster:update" => MEMBER_DENY_CLUSTER_USER, "Update an existing cluster.",
        [("PATCH", CLUSTER)];
    "cluster:update_health_status" => "rule:admin_or_project_member_user_or_cluster_user",
        "Update the health status of an existing cluster.", [("PATCH", CLUSTER)];
    "cluster:update_all_projects" => ADMIN, "Update an existing cluster in any project.",
        [("PATCH", CLUSTER)];
    "cluster:resize" => MEMBER_DENY_CLUSTER_USER, "Resize an existing cluster.",
        [("POST", "/v1/clusters/{cluster_ident}/actions/resize")];
    "cluster:upgrade" => MEMBER_DENY_CLUSTER_USER, "Upgrade an existing cluster.",
        [("POST", "/v1/clusters/{cluster_ident}/actions/upgrade")];
    "cluster:upgrade_all_projects" => ADMIN, "Upgrade an existing cluster across all projects.",
        [("POST", "/v1/clusters/{cluster_ident}/actions/upgrade")];
    "cluster:retry" => MEMBER_DENY_CLUSTER_USER,
        "Retry the create of a cluster whose create failed, in place.",
        [("POST", "/v1/clusters/{cluster_ident}/actions/retry")];

    // ---- Cluster templates ----
    "clustertemplate:create" => MEMBER_DENY_CLUSTER_USER, "Create a new cluster template.",
        [("POST", TEMPLATES)];
    "clustertemplate:delete" => ADMIN_OR_MEMBER, "Delete a cluster template.",
        [("DELETE", TEMPLATE)];
    "clustertemplate:delete_all_projects" => ADMIN,
        "Delete a cluster template from any project.", [("DELETE", TEMPLATE)];
    "clustertemplate:detail" => READER_DENY_CLUSTER_USER,
        "Retrieve a list of cluster templates with detail.", [("GET", TEMPLATES_DETAIL)];
    "clustertemplate:detail_all_projects" => ADMIN,
        "Retrieve a list of cluster templates with detail across projects.",
        [("GET", TEMPLATES_DETAIL)];
    "clustertemplate:get" => READER_DENY_CLUSTER_USER,
        "Retrieve information about the given (non-public) cluster template.", [("GET", TEMPLATE)];
    "clustertemplate:get_one_all_projects" => ADMIN,
        "Retrieve information about the given cluster template across projects.",
        [("GET", TEMPLATE)];
    "clustertemplate:get_all" => READER_DENY_CLUSTER_USER,
        "Retrieve a list of cluster templates.", [("GET", TEMPLATES)];
    "clustertemplate:get_all_all_projects" => ADMIN,
        "Retrieve a list of cluster templates across projects.", [("GET", TEMPLATES)];
    "clustertemplate:update" => ADMIN_OR_MEMBER, "Update an existing cluster template.",
        [("PATCH", TEMPLATE)];
    "clustertemplate:update_all_projects" => ADMIN,
        "Update an existing cluster template in any project.", [("PATCH", TEMPLATE)];
    "clustertemplate:publish" => ADMIN,
        "Publish a cluster template (set its public or hidden flag).",
        [("POST", TEMPLATES), ("PATCH", TEMPLATE)];

    // ---- Credentials ----
    "credential:rotate" => "rule:project_member_deny_cluster_user",
        "Rotate the credential (trustee) of the given cluster.",
        [("PATCH", "/v1/credentials/{cluster_ident}")];

    // ---- Federations (join, unjoin and *_all_projects are Fleetyard additions) ----
    "federation:create" => MEMBER_DENY_CLUSTER_USER, "Create a new federation.",
        [("POST", FEDERATIONS)];
    "federation:delete" => MEMBER_DENY_CLUSTER_USER, "Delete a federation.",
        [("DELETE", FEDERATION)];
    "federation:delete_force" => ADMIN,
        "Force the delete of a federation (?force=true, microversion 1.18): its record is removed after one last best-effort clean-up, whatever the driver answers.",
        [("DELETE", "/v1/federations/{federation_ident}?force=true")];
    "federation:update" => MEMBER_DENY_CLUSTER_USER, "Update an existing federation.",
        [("PATCH", FEDERATION)];
    "federation:join" => MEMBER_DENY_CLUSTER_USER,
        "Add a cluster to a federation; evaluated against both the federation and the member \
         cluster.", [("PATCH", FEDERATION)];
    "federation:unjoin" => MEMBER_DENY_CLUSTER_USER,
        "Remove a cluster from a federation; evaluated against both the federation and the \
         member cluster.", [("PATCH", FEDERATION)];
    "federation:retry" => MEMBER_DENY_CLUSTER_USER,
        "Retry the create of a federation whose create failed, in place.",
        [("POST", "/v1/federations/{federation_ident}/actions/retry")];
    "federation:detail" => READER_DENY_CLUSTER_USER,
        "Retrieve a list of federations with detail.", [("GET", FEDERATIONS_DETAIL)];
    "federation:detail_all_projects" => ADMIN,
        "Retrieve a list of federations with detail across projects.",
        [("GET", FEDERATIONS_DETAIL)];
    "federation:get" => READER_DENY_CLUSTER_USER,
        "Retrieve information about the given federation.", [("GET", FEDERATION)];
    "federation:get_one_all_projects" => ADMIN,
        "Retrieve information about the given federation across projects.",
        [("GET", FEDERATION)];
    "federation:get_all" => READER_DENY_CLUSTER_USER, "Retrieve a list of federations.",
        [("GET", FEDERATIONS)];
    "federation:get_all_all_projects" => ADMIN,
        "Retrieve a list of federations across projects.", [("GET", FEDERATIONS)];

    // ---- Cluster groups and their bindings (microversion 1.20, a Fleetyard addition) ----
    "clustergroup:create" => ADMIN_OR_MEMBER, "Create a cluster group in the caller's project.",
        [("POST", GROUPS)];
    "clustergroup:get" => ADMIN_OR_READER,
        "Retrieve a cluster group of the project, and its explicit members.",
        [("GET", GROUP), ("GET", GROUP_MEMBERS)];
    "clustergroup:get_all" => ADMIN_OR_READER, "Retrieve a list of the project's cluster groups.",
        [("GET", GROUPS)];
    "clustergroup:get_all_all_projects" => ADMIN,
        "Retrieve a list of cluster groups across projects.", [("GET", GROUPS)];
    "clustergroup:update" => ADMIN_OR_MEMBER,
        "Change a cluster group's description or label selector.", [("PATCH", GROUP)];
    "clustergroup:delete" => ADMIN_OR_MEMBER,
        "Delete a cluster group with its memberships and bindings.", [("DELETE", GROUP)];
    "clustergroup:member_add" => ADMIN_OR_MEMBER,
        "Add a cluster to a cluster group (evaluated against the group): a cluster of another \
         project is proposed and grants nothing until its project accepts.",
        [("POST", GROUPS), ("POST", GROUP_MEMBERS)];
    "clustergroup:member_consent" => ADMIN_OR_MEMBER,
        "Consent to a cluster's membership in a cluster group (evaluated against the \
         cluster's project): accepting a proposal, or adding one's own cluster.",
        [("POST", GROUP_MEMBERS), ("POST", GROUP_MEMBER_ACCEPT)];
    "clustergroup:member_delete" => ADMIN_OR_MEMBER,
        "Remove a cluster from a cluster group (evaluated against the group for its \
         project, against the cluster for the cluster's project).",
        [("DELETE", GROUP_MEMBER)];
    "clustergroup:binding_create" => ADMIN_OR_MEMBER,
        "Bind a cluster group to a project: grant it read or write over the group's clusters.",
        [("POST", GROUP_BINDINGS)];
    "clustergroup:binding_get" => ADMIN_OR_READER,
        "Retrieve the bindings of a cluster group.",
        [("GET", GROUP_BINDINGS), ("GET", GROUP_BINDING)];
    "clustergroup:binding_delete" => ADMIN_OR_MEMBER,
        "Delete a binding of a cluster group (its grantee loses what it granted).",
        [("DELETE", GROUP_BINDING)];

    // ---- Magnum services ----
    "magnum-service:get_all" => ADMIN, "Retrieve a list of magnum-services.",
        [("GET", "/v1/mservices")];

    // ---- Machines (one per node) ----
    "machine:get" => ADMIN_OR_READER, "Retrieve information about the given machine.",
        [("GET", MACHINE), ("GET", KUBE_MACHINE), ("GET", KUBE_MACHINE_STATUS)];
    "machine:get_all" => ADMIN_OR_READER,
        "Retrieve a list of the machines of a cluster, or of a project.",
        [("GET", MACHINES), ("GET", KUBE_MACHINES), ("GET", KUBE_MACHINES_ALL)];
    "machine:get_all_all_projects" => ADMIN, "Retrieve a list of machines across projects.",
        [("GET", MACHINES), ("GET", KUBE_MACHINES_ALL)];
    "machine:get_one_all_projects" => ADMIN,
        "Retrieve information about a given machine across projects.", [("GET", MACHINE)];
    "machine:create" => ADMIN_OR_MEMBER, "Create a machine in a node group (the group grows by one).",
        [("POST", NODEGROUP_MACHINES), ("POST", KUBE_MACHINES)];
    "machine:delete" => ADMIN_OR_MEMBER,
        "Delete a specific machine (its node group shrinks by one).",
        [("DELETE", MACHINE), ("DELETE", KUBE_MACHINE)];
    // One machine's changes (microversion 1.20).
    "machine:update" => ADMIN_OR_MEMBER,
        "Change a machine's kubelet version, container runtime or OS image (in place or by \
         replacement, as its driver decides).",
        [("PATCH", MACHINE), ("PUT", KUBE_MACHINE), ("PATCH", KUBE_MACHINE)];
    "machine:update_status" => ADMIN,
        "Write a machine's status subresource (what its driver observes, until the driver \
         next reports; the phase stays the service's operations').",
        [("PUT", KUBE_MACHINE_STATUS), ("PATCH", KUBE_MACHINE_STATUS)];
    "machine:replace" => ADMIN_OR_MEMBER,
        "Replace a machine by a new one (the new one first, then the old one goes).",
        [("POST", "/v1/clusters/{cluster_ident}/machines/{machine_ident}/actions/replace")];
    "machine:reboot" => ADMIN_OR_MEMBER, "Reboot a machine.",
        [("POST", "/v1/clusters/{cluster_ident}/machines/{machine_ident}/actions/reboot")];

    // ---- Node groups ----
    "nodegroup:get" => ADMIN_OR_READER, "Retrieve information about the given nodegroup.",
        [("GET", NODEGROUP), ("GET", KUBE_DEPLOYMENT), ("GET", KUBE_DEPLOYMENT_SCALE)];
    "nodegroup:get_all" => ADMIN_OR_READER,
        "Retrieve a list of nodegroups that belong to a cluster, or of a project.",
        [("GET", NODEGROUPS), ("GET", NODEGROUPS_DETAIL), ("GET", KUBE_DEPLOYMENTS),
         ("GET", KUBE_DEPLOYMENTS_ALL)];
    "nodegroup:get_all_all_projects" => ADMIN, "Retrieve a list of nodegroups across projects.",
        [("GET", NODEGROUPS), ("GET", NODEGROUPS_DETAIL), ("GET", KUBE_DEPLOYMENTS_ALL)];
    "nodegroup:get_one_all_projects" => ADMIN,
        "Retrieve information about a given nodegroup across projects.", [("GET", NODEGROUP)];
    "nodegroup:create" => ADMIN_OR_MEMBER, "Create a new nodegroup.", [("POST", NODEGROUPS)];
    "nodegroup:delete" => ADMIN_OR_MEMBER, "Delete a nodegroup.",
        [("DELETE", NODEGROUP), ("DELETE", KUBE_DEPLOYMENT)];
    "nodegroup:update" => ADMIN_OR_MEMBER,
        "Update an existing nodegroup (on the Kubernetes face: its MachineDeployment's \
         replicas, flavor, image or kubelet version, and its scale).",
        [("PATCH", NODEGROUP), ("PUT", KUBE_DEPLOYMENT), ("PATCH", KUBE_DEPLOYMENT),
         ("PUT", KUBE_DEPLOYMENT_SCALE), ("PATCH", KUBE_DEPLOYMENT_SCALE)];
    "nodegroup:retry" => ADMIN_OR_MEMBER,
        "Retry the create of a nodegroup whose create failed, in place.",
        [("POST", "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/actions/retry")];
    "nodegroup:create_all_projects" => ADMIN,
        "Create a nodegroup in a cluster of any project.", [("POST", NODEGROUPS)];
    "nodegroup:update_all_projects" => ADMIN, "Update a nodegroup of any project.",
        [("PATCH", NODEGROUP)];
    "nodegroup:delete_all_projects" => ADMIN, "Delete a nodegroup of any project.",
        [("DELETE", NODEGROUP)];
    "nodegroup:delete_force" => ADMIN,
        "Force the delete of a nodegroup (?force=true, microversion 1.18): its record is removed after one last best-effort clean-up, whatever the driver answers.",
        [("DELETE", "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}?force=true")];

    // ---- Quotas and stats ----
    "quota:create" => ADMIN, "Create quota.", [("POST", QUOTAS)];
    "quota:delete" => ADMIN, "Delete quota for a given project_id and resource.",
        [("DELETE", QUOTA)];
    "quota:get" => ADMIN_OR_READER, "Retrieve quota information for the given project_id.",
        [("GET", QUOTA)];
    "quota:get_all" => ADMIN, "Retrieve a list of quotas.", [("GET", QUOTAS)];
    "quota:update" => ADMIN, "Update quota for a given project_id.", [("PATCH", QUOTA)];
    "stats:get_all" => ADMIN_OR_READER, "Retrieve magnum stats.", [("GET", "/v1/stats")];

    // ---- Kubernetes-style cluster registry (clusterregistry.k8s.io), a Fleetyard addition ----
    "registry:get" => ADMIN_OR_READER,
        "Retrieve a cluster through the registry (clusterregistry.k8s.io Cluster or \
         multicluster.x-k8s.io ClusterProfile).",
        [("GET", REGISTRY_ONE), ("GET", REGISTRY_STATUS), ("GET", PROFILE)];
    "registry:list" => ADMIN_OR_READER,
        "List a project's clusters through the registry (every project the caller may see with \
         the all-namespaces path).",
        [("GET", REGISTRY), ("GET", REGISTRY_ALL), ("GET", PROFILES), ("GET", PROFILES_ALL)];
    "registry:watch" => ADMIN_OR_READER, "Watch clusters through the registry (?watch=true).",
        [("GET", REGISTRY), ("GET", REGISTRY_ALL), ("GET", PROFILES), ("GET", PROFILES_ALL)];
    "registry:create" => ADMIN_OR_MEMBER, "Register a cluster (driver external).",
        [("POST", REGISTRY)];
    "registry:update" => ADMIN_OR_MEMBER,
        "Replace or patch a cluster's registry object (labels, annotations, endpoints).",
        [("PUT", REGISTRY_ONE), ("PATCH", REGISTRY_ONE)];
    "registry:update_status" => ADMIN_OR_MEMBER,
        "Replace or patch a cluster's status subresource (the conditions of outside \
         controllers; the health prober's OK condition stays the service's).",
        [("PUT", REGISTRY_STATUS), ("PATCH", REGISTRY_STATUS)];
    "registry:delete" => ADMIN_OR_MEMBER, "Delete a cluster through the registry.",
        [("DELETE", REGISTRY_ONE), ("DELETE", REGISTRY)];
    "registry:export" => ADMIN_OR_READER,
        "Export a kubeconfig (servers and CAs, no credentials) for the clusters a label selector \
         picks.",
        [("GET", KUBECONFIG), ("GET", KUBECONFIG_ALL)];
    "registry:impersonate" => ADMIN,
        "Act as another user on the Kubernetes-facing paths (/api, /apis) with the \
         Impersonate-User, Impersonate-Group, Impersonate-Uid and Impersonate-Extra-* headers. \
         Evaluated against the impersonated user and project (user_id, project_id); the \
         impersonated roles are whatever the headers say, so whoever passes this rule can act \
         as an admin: keep it for admins. /v1 takes no impersonation headers.",
        [("ANY", "/api/{path}"), ("ANY", "/apis/{path}")];
};
