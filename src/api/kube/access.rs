//! Who may do what on the Kubernetes face, in Kubernetes' words: one table from a verb on a
//! resource (and subresource) to the policy rule that decides it. The handlers take their
//! rule and verb from the constants here, and the access reviews
//! (`SelfSubjectAccessReview`, `SelfSubjectRulesReview`: `kubectl auth can-i`) answer from the
//! same table with [`decide`], so what a review says is what the handler does.
//!
//! A namespace is a project. In a namespace, a caller is allowed when it is an admin or the
//! namespace is its own project, and the rule passes for that project (the handlers'
//! `authorize_namespace`). Without a namespace (`-A`), a list or watch is allowed when the rule
//! passes for the caller's own project (an admin then sees every project, anyone else their
//! own); any other verb across namespaces only for an admin. In another project's namespace, a
//! caller some cluster group is bound to reads (and, with `write`, changes) the clusters the
//! groups reach ([`decide_through`]).

use serde_json::{Map, Value};

use super::status::{
    Resource, CLUSTERS, CLUSTER_GROUPS, CLUSTER_GROUP_BINDINGS, CLUSTER_PROFILES, MACHINES,
    MACHINE_DEPLOYMENTS,
};
use crate::api::RequestContext;
use crate::domain::cluster_group::{ClusterAction, GroupRight};

/// A verb and the policy rule that decides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub rule: &'static str,
    pub verb: &'static str,
}

impl Access {
    /// `(rule, verb)`, as the handlers' helpers take them.
    pub const fn pair(self) -> (&'static str, &'static str) {
        (self.rule, self.verb)
    }
}

const fn access(rule: &'static str, verb: &'static str) -> Access {
    Access { rule, verb }
}

pub const GET: Access = access("registry:get", "get");
pub const LIST: Access = access("registry:list", "list");
pub const WATCH: Access = access("registry:watch", "watch");
pub const CREATE: Access = access("registry:create", "create");
/// A replace (PUT).
pub const UPDATE: Access = access("registry:update", "update");
/// A merge, JSON or apply patch; the handlers word a refusal as an `update`.
pub const PATCH: Access = access("registry:update", "patch");
pub const DELETE: Access = access("registry:delete", "delete");
pub const DELETE_COLLECTION: Access = access("registry:delete", "deletecollection");
pub const STATUS_UPDATE: Access = access("registry:update_status", "update");
pub const STATUS_PATCH: Access = access("registry:update_status", "patch");
/// The kubeconfig export (`GET …/kubeconfig`).
pub const EXPORT: Access = access("registry:export", "get");
/// `Impersonate-*` headers (users, groups, uids, userextras).
pub const IMPERSONATE: Access = access("registry:impersonate", "impersonate");

/// A machine's read (`machine:get`), and a list of machines (`machine:get_all`; every
/// project's across namespaces for an admin that `machine:get_all_all_projects` also allows).
pub const MACHINE_GET: Access = access("machine:get", "get");
pub const MACHINE_LIST: Access = access("machine:get_all", "list");
pub const MACHINE_DELETE: Access = access("machine:delete", "delete");
/// A machine's create (its node group grows by one).
pub const MACHINE_CREATE: Access = access("machine:create", "create");
/// A watch of machines, decided as their list.
pub const MACHINE_WATCH: Access = access("machine:get_all", "watch");
/// A machine's replace (PUT) and patch (merge, JSON, apply): a change of its versions,
/// runtime or image, decided as the `/v1` PATCH of a machine.
pub const MACHINE_UPDATE: Access = access("machine:update", "update");
pub const MACHINE_PATCH: Access = access("machine:update", "patch");
/// `machines/status`: read as the machine; written (a controller's act) by
/// `machine:update_status`.
pub const MACHINE_STATUS_GET: Access = access("machine:get", "get");
pub const MACHINE_STATUS_UPDATE: Access = access("machine:update_status", "update");
pub const MACHINE_STATUS_PATCH: Access = access("machine:update_status", "patch");
/// What an admin's list across namespaces also needs to show every project's machines.
pub const MACHINE_LIST_ALL_PROJECTS: &str = "machine:get_all_all_projects";

/// Machine deployments (one per node group), by the node group rules of `/v1`: a read
/// (`nodegroup:get`), a list (`nodegroup:get_all`; every project's across namespaces for an
/// admin that `nodegroup:get_all_all_projects` also allows), and every change (a replace, a
/// patch, the `scale` subresource: a resize, a roll or a version) by `nodegroup:update`.
pub const DEPLOYMENT_GET: Access = access("nodegroup:get", "get");
pub const DEPLOYMENT_LIST: Access = access("nodegroup:get_all", "list");
/// A watch of machine deployments, decided as their list.
pub const DEPLOYMENT_WATCH: Access = access("nodegroup:get_all", "watch");
pub const DEPLOYMENT_UPDATE: Access = access("nodegroup:update", "update");
pub const DEPLOYMENT_PATCH: Access = access("nodegroup:update", "patch");
/// A machine deployment's delete: its node group's (`nodegroup:delete`).
pub const DEPLOYMENT_DELETE: Access = access("nodegroup:delete", "delete");
pub const DEPLOYMENT_LIST_ALL_PROJECTS: &str = "nodegroup:get_all_all_projects";

/// Cluster groups, by the rules of `/v1/clustergroups`: read, list, create, update (a replace
/// or a patch) and delete; an admin's list across namespaces also needs
/// `clustergroup:get_all_all_projects` to show every project's groups and bindings.
pub const GROUP_GET: Access = access("clustergroup:get", "get");
pub const GROUP_LIST: Access = access("clustergroup:get_all", "list");
pub const GROUP_CREATE: Access = access("clustergroup:create", "create");
pub const GROUP_UPDATE: Access = access("clustergroup:update", "update");
pub const GROUP_PATCH: Access = access("clustergroup:update", "patch");
pub const GROUP_DELETE: Access = access("clustergroup:delete", "delete");
pub const GROUP_LIST_ALL_PROJECTS: &str = "clustergroup:get_all_all_projects";
/// A watch of groups, decided as their list.
pub const GROUP_WATCH: Access = access("clustergroup:get_all", "watch");
/// A group's bindings, by the rules of `/v1/clustergroups/{g}/bindings`.
pub const BINDING_GET: Access = access("clustergroup:binding_get", "get");
pub const BINDING_LIST: Access = access("clustergroup:binding_get", "list");
pub const BINDING_CREATE: Access = access("clustergroup:binding_create", "create");
pub const BINDING_DELETE: Access = access("clustergroup:binding_delete", "delete");
/// A watch of bindings, decided as their list.
pub const BINDING_WATCH: Access = access("clustergroup:binding_get", "watch");

/// The kubeconfig export, a read of its own.
pub const KUBECONFIG: Resource = Resource {
    plural: "kubeconfig",
    singular: "kubeconfig",
    kind: "Config",
    list_kind: "Config",
    ..CLUSTERS
};

/// One row of the table: a verb on `resource` (`subresource` "" for the object itself).
#[derive(Debug, Clone, Copy)]
pub struct Grant {
    pub resource: &'static Resource,
    pub subresource: &'static str,
    pub access: Access,
}

const fn grant(resource: &'static Resource, subresource: &'static str, access: Access) -> Grant {
    Grant {
        resource,
        subresource,
        access,
    }
}

/// Every verb on every namespaced resource the registry serves, and the rule that decides it.
pub static GRANTS: &[Grant] = &[
    grant(&CLUSTERS, "", GET),
    grant(&CLUSTERS, "", LIST),
    grant(&CLUSTERS, "", WATCH),
    grant(&CLUSTERS, "", CREATE),
    grant(&CLUSTERS, "", UPDATE),
    grant(&CLUSTERS, "", PATCH),
    grant(&CLUSTERS, "", DELETE),
    grant(&CLUSTERS, "", DELETE_COLLECTION),
    grant(&CLUSTERS, "status", GET),
    grant(&CLUSTERS, "status", STATUS_UPDATE),
    grant(&CLUSTERS, "status", STATUS_PATCH),
    grant(&CLUSTER_PROFILES, "", GET),
    grant(&CLUSTER_PROFILES, "", LIST),
    grant(&CLUSTER_PROFILES, "", WATCH),
    grant(&MACHINES, "", MACHINE_GET),
    grant(&MACHINES, "", MACHINE_LIST),
    grant(&MACHINES, "", MACHINE_DELETE),
    grant(&MACHINES, "", MACHINE_CREATE),
    grant(&MACHINES, "", MACHINE_WATCH),
    grant(&MACHINES, "", MACHINE_UPDATE),
    grant(&MACHINES, "", MACHINE_PATCH),
    grant(&MACHINES, "status", MACHINE_STATUS_GET),
    grant(&MACHINES, "status", MACHINE_STATUS_UPDATE),
    grant(&MACHINES, "status", MACHINE_STATUS_PATCH),
    grant(&MACHINE_DEPLOYMENTS, "", DEPLOYMENT_GET),
    grant(&MACHINE_DEPLOYMENTS, "", DEPLOYMENT_LIST),
    grant(&MACHINE_DEPLOYMENTS, "", DEPLOYMENT_WATCH),
    grant(&MACHINE_DEPLOYMENTS, "", DEPLOYMENT_UPDATE),
    grant(&MACHINE_DEPLOYMENTS, "", DEPLOYMENT_PATCH),
    grant(&MACHINE_DEPLOYMENTS, "", DEPLOYMENT_DELETE),
    grant(&MACHINE_DEPLOYMENTS, "scale", DEPLOYMENT_GET),
    grant(&MACHINE_DEPLOYMENTS, "scale", DEPLOYMENT_UPDATE),
    grant(&MACHINE_DEPLOYMENTS, "scale", DEPLOYMENT_PATCH),
    grant(&KUBECONFIG, "", EXPORT),
    grant(&CLUSTER_GROUPS, "", GROUP_GET),
    grant(&CLUSTER_GROUPS, "", GROUP_LIST),
    grant(&CLUSTER_GROUPS, "", GROUP_CREATE),
    grant(&CLUSTER_GROUPS, "", GROUP_UPDATE),
    grant(&CLUSTER_GROUPS, "", GROUP_PATCH),
    grant(&CLUSTER_GROUPS, "", GROUP_DELETE),
    grant(&CLUSTER_GROUPS, "", GROUP_WATCH),
    grant(&CLUSTER_GROUP_BINDINGS, "", BINDING_GET),
    grant(&CLUSTER_GROUP_BINDINGS, "", BINDING_LIST),
    grant(&CLUSTER_GROUP_BINDINGS, "", BINDING_CREATE),
    grant(&CLUSTER_GROUP_BINDINGS, "", BINDING_DELETE),
    grant(&CLUSTER_GROUP_BINDINGS, "", BINDING_WATCH),
];

/// Cluster-scoped resources every authenticated caller may use: the reviews themselves
/// (create), and the namespaces it can see (get and list: its own project, or every project
/// for an admin).
pub static OPEN: &[(&str, &str, &str)] = &[
    ("authorization.k8s.io", "selfsubjectaccessreviews", "create"),
    ("authorization.k8s.io", "selfsubjectrulesreviews", "create"),
    ("authentication.k8s.io", "selfsubjectreviews", "create"),
    ("", "namespaces", "get"),
    ("", "namespaces", "list"),
];

/// The resources of impersonation (core group, cluster scope), decided by [`IMPERSONATE`].
pub static IMPERSONATION: &[&str] = &["users", "groups", "uids", "userextras"];

/// The paths any authenticated caller may GET: discovery, OpenAPI, version and health.
pub static NON_RESOURCE_URLS: &[&str] = &[
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
];

/// What a review asks about, as `ResourceAttributes` say it ("" for a field not given).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ask<'a> {
    pub namespace: &'a str,
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub name: &'a str,
}

/// The answer to one [`Ask`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// Whether the policy refused outright (as opposed to nothing being served there).
    pub denied: bool,
    pub reason: String,
}

/// The target policy rules check for a namespace: the project it is.
pub fn namespace_target(ctx: &RequestContext, namespace: &str) -> Map<String, Value> {
    let mut t = Map::new();
    t.insert("project_id".into(), Value::String(namespace.to_string()));
    t.insert("user_id".into(), Value::String(ctx.user_id.clone()));
    t
}

/// The target of [`IMPERSONATE`]: the impersonated user and project.
pub fn impersonation_target(user: &str, project: &str) -> Map<String, Value> {
    let mut t = Map::new();
    t.insert("project_id".into(), Value::String(project.to_string()));
    t.insert("user_id".into(), Value::String(user.to_string()));
    t
}

/// Whether `ctx` may use `access` in `namespace` ("" for every namespace), and why.
fn decide_grant(ctx: &RequestContext, access: Access, namespace: &str) -> Decision {
    let rule = access.rule;
    if !namespace.is_empty() {
        if !(ctx.is_admin || ctx.project_id == namespace) {
            return Decision {
                allowed: false,
                denied: true,
                reason: format!(
                    "namespace {namespace:?} is not the caller's project {:?}",
                    ctx.project_id
                ),
            };
        }
        let allowed = ctx.allowed(rule, &namespace_target(ctx, namespace));
        return Decision {
            allowed,
            denied: !allowed,
            reason: format!(
                "policy rule {rule:?} {} it in project {namespace:?}",
                if allowed { "allows" } else { "does not allow" }
            ),
        };
    }
    let allowed = ctx.allowed(rule, &ctx.own_target());
    if !allowed {
        return Decision {
            allowed: false,
            denied: true,
            reason: format!("policy rule {rule:?} does not allow it"),
        };
    }
    if ctx.is_admin {
        return Decision {
            allowed: true,
            denied: false,
            reason: format!("policy rule {rule:?} allows it in every project to an admin"),
        };
    }
    if matches!(access.verb, "list" | "watch") || access == EXPORT {
        return Decision {
            allowed: true,
            denied: false,
            reason: format!(
                "policy rule {rule:?} allows it; across namespaces it shows project {:?} only",
                ctx.project_id
            ),
        };
    }
    Decision {
        allowed: false,
        denied: true,
        reason: format!(
            "only an admin may do this across namespaces; ask in namespace {:?}",
            ctx.project_id
        ),
    }
}

fn matches(asked: &str, served: &str) -> bool {
    asked == "*" || asked == served
}

/// Every (group, resource, subresource, verb) the face decides, and its decision for `ask`'s
/// namespace and name.
fn decisions<'a>(
    ctx: &'a RequestContext,
    ask: &'a Ask<'a>,
) -> impl Iterator<Item = (String, &'static str, &'static str, Decision)> + 'a {
    let grants = GRANTS.iter().map(move |g| {
        let resource = if g.subresource.is_empty() {
            g.resource.plural.to_string()
        } else {
            format!("{}/{}", g.resource.plural, g.subresource)
        };
        (
            resource,
            g.resource.group,
            g.access.verb,
            decide_grant(ctx, g.access, ask.namespace),
        )
    });
    let open = OPEN.iter().map(move |(group, resource, verb)| {
        let allowed = *resource != "namespaces"
            || *verb != "get"
            || ask.name.is_empty()
            || ctx.is_admin
            || ask.name == ctx.project_id;
        let reason = if allowed {
            "every authenticated caller may".to_string()
        } else {
            format!("namespace {:?} is not the caller's project", ask.name)
        };
        (
            resource.to_string(),
            *group,
            *verb,
            Decision {
                allowed,
                denied: !allowed,
                reason,
            },
        )
    });
    let impersonation = IMPERSONATION.iter().map(move |resource| {
        let (user, project) = if *resource == "users" {
            (ask.name, "")
        } else {
            ("", "")
        };
        let allowed = ctx.allowed(IMPERSONATE.rule, &impersonation_target(user, project));
        (
            resource.to_string(),
            "",
            IMPERSONATE.verb,
            Decision {
                allowed,
                denied: !allowed,
                reason: format!(
                    "policy rule {:?} {} it",
                    IMPERSONATE.rule,
                    if allowed { "allows" } else { "does not allow" }
                ),
            },
        )
    });
    grants.chain(open).chain(impersonation)
}

/// The answer to `ask`: allowed when at least one served (resource, verb) matches it (`*`
/// matches anything) and every one that matches is allowed.
pub fn decide(ctx: &RequestContext, ask: &Ask<'_>) -> Decision {
    let asked_resource = if ask.subresource.is_empty() {
        ask.resource.to_string()
    } else {
        format!("{}/{}", ask.resource, ask.subresource)
    };
    let mut matched: Vec<Decision> = decisions(ctx, ask)
        .filter(|(resource, group, verb, _)| {
            matches(ask.group, group)
                && matches(ask.verb, verb)
                && (ask.resource == "*" || asked_resource == *resource)
        })
        .map(|(_, _, _, d)| d)
        .collect();
    if matched.is_empty() {
        let group = if ask.group.is_empty() {
            "the core group".to_string()
        } else {
            format!("API group {:?}", ask.group)
        };
        return Decision {
            allowed: false,
            denied: false,
            reason: format!(
                "the service does not serve {:?} on {asked_resource:?} in {group}",
                ask.verb
            ),
        };
    }
    if let Some(pos) = matched.iter().position(|d| !d.allowed) {
        return matched.swap_remove(pos);
    }
    if matched.len() == 1 {
        return matched.swap_remove(0);
    }
    Decision {
        allowed: true,
        denied: false,
        reason: format!("all {} matching operations are allowed", matched.len()),
    }
}

/// What a cluster group's binding answers for in another project's namespace: a read or a
/// change of clusters, a read of their ClusterProfiles, the kubeconfig export. Nothing else
/// (status, create, deletecollection, machines) is granted through groups.
fn through_groups(g: &Grant) -> Option<ClusterAction> {
    match (g.resource.plural, g.subresource, g.access.verb) {
        ("clusters", "", "get") => Some(ClusterAction::Get),
        ("clusters", "", "list") => Some(ClusterAction::List),
        ("clusters", "", "watch") => Some(ClusterAction::Watch),
        ("clusters", "", "update" | "patch") => Some(ClusterAction::Update),
        ("clusters", "", "delete") => Some(ClusterAction::Delete),
        ("clusterprofiles", "", "get" | "list" | "watch") => Some(ClusterAction::ClusterProfile),
        ("kubeconfig", "", "get") => Some(ClusterAction::Export),
        _ => None,
    }
}

/// What the groups bound to a caller's project reach in a namespace not its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// No cluster was named: a list or watch there shows what the groups reach.
    Namespace,
    /// The named cluster, and the greatest right over it (None: no group reaches it, or it
    /// does not exist).
    Named(Option<GroupRight>),
}

/// The answer to `ask` in another project's namespace for a caller some group is bound to:
/// allowed when every served (resource, verb) it matches is one a group grants, the caller's
/// own project's rule allows it, and `reach` gives the right (a list or watch without a name
/// is allowed: it shows what the groups reach; any other verb needs a name).
pub fn decide_through(ctx: &RequestContext, ask: &Ask<'_>, reach: Reach) -> Decision {
    let asked_resource = if ask.subresource.is_empty() {
        ask.resource.to_string()
    } else {
        format!("{}/{}", ask.resource, ask.subresource)
    };
    let refused = |reason: String| Decision {
        allowed: false,
        denied: true,
        reason,
    };
    let mut matched = 0;
    for g in GRANTS {
        let resource = if g.subresource.is_empty() {
            g.resource.plural.to_string()
        } else {
            format!("{}/{}", g.resource.plural, g.subresource)
        };
        if !(matches(ask.group, g.resource.group)
            && matches(ask.verb, g.access.verb)
            && (ask.resource == "*" || asked_resource == resource))
        {
            continue;
        }
        matched += 1;
        let Some(action) = through_groups(g) else {
            return refused(format!(
                "{} {resource:?} in namespace {:?} is not granted through cluster groups",
                g.access.verb, ask.namespace
            ));
        };
        if !ctx.allowed(g.access.rule, &ctx.own_target()) {
            return refused(format!(
                "policy rule {:?} does not allow it in project {:?}",
                g.access.rule, ctx.project_id
            ));
        }
        let granted = match reach {
            Reach::Namespace => matches!(g.access.verb, "list" | "watch"),
            Reach::Named(right) => right.is_some_and(|r| r.allows(action)),
        };
        if !granted {
            return refused(match reach {
                Reach::Named(Some(r)) => format!(
                    "the cluster groups bound to project {:?} grant {} access to {:?}",
                    ctx.project_id,
                    r.as_str(),
                    ask.name
                ),
                Reach::Named(None) => format!(
                    "no cluster group bound to project {:?} reaches {:?} in namespace {:?}",
                    ctx.project_id, ask.name, ask.namespace
                ),
                Reach::Namespace => format!(
                    "only the clusters the groups bound to project {:?} reach, by name",
                    ctx.project_id
                ),
            });
        }
    }
    if matched == 0 {
        return decide(ctx, ask);
    }
    Decision {
        allowed: true,
        denied: false,
        reason: format!(
            "the cluster groups bound to project {:?} decide it in namespace {:?}",
            ctx.project_id, ask.namespace
        ),
    }
}

/// What bound cluster groups grant in another project's namespace without naming a cluster:
/// `list` and `watch` of the resources groups grant reads of, where the caller's own
/// project's rule allows them (a named cluster's rights are [`decide_through`]'s).
pub fn through_rules(ctx: &RequestContext) -> Vec<(&'static str, String, Vec<String>)> {
    let mut out: Vec<(&'static str, String, Vec<String>)> = Vec::new();
    for g in GRANTS {
        if through_groups(g).is_none()
            || !matches!(g.access.verb, "list" | "watch")
            || !ctx.allowed(g.access.rule, &ctx.own_target())
        {
            continue;
        }
        let resource = g.resource.plural.to_string();
        match out
            .iter_mut()
            .find(|(group, r, _)| *group == g.resource.group && *r == resource)
        {
            Some((_, _, verbs)) => verbs.push(g.access.verb.to_string()),
            None => out.push((g.resource.group, resource, vec![g.access.verb.to_string()])),
        }
    }
    out
}

/// Whether a `GET` (the only verb) of `path` is allowed: the discovery, OpenAPI, version and
/// health paths to any authenticated caller.
pub fn decide_path(verb: &str, path: &str) -> Decision {
    let served = NON_RESOURCE_URLS.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => path == *p,
    });
    let allowed = matches!(verb, "get" | "*") && served;
    Decision {
        allowed,
        denied: false,
        reason: if allowed {
            "every authenticated caller may read the discovery, OpenAPI, version and health paths"
                .into()
        } else {
            format!("the service does not serve {verb:?} on {path:?}")
        },
    }
}

/// The rules of `namespace` ("" for every namespace): for each (group, resource), the verbs
/// the caller is allowed, in the table's order.
pub fn rules(ctx: &RequestContext, namespace: &str) -> Vec<(&'static str, String, Vec<String>)> {
    let ask = Ask {
        namespace,
        ..Ask::default()
    };
    let mut out: Vec<(&'static str, String, Vec<String>)> = Vec::new();
    for (resource, group, verb, d) in decisions(ctx, &ask) {
        if !d.allowed {
            continue;
        }
        match out
            .iter_mut()
            .find(|(g, r, _)| *g == group && *r == resource)
        {
            Some((_, _, verbs)) => {
                if !verbs.iter().any(|v| v == verb) {
                    verbs.push(verb.to_string());
                }
            }
            None => out.push((group, resource, vec![verb.to_string()])),
        }
    }
    out
}
