//! The access matrix: one row for every (method, path) the service serves, and what each caller
//! class gets there. Project A owns one of everything; then
//!
//! * a member of project B gets, for A's objects, exactly the 404 it gets for an object that
//!   does not exist (never a 403, never data); lists and creates act on B's own project only;
//! * a reader of project A reads what A's members read, and every write is a 403 with Magnum's
//!   body that changes nothing;
//! * admin-only operations refuse A's members (and readers, and B) with a 403, and succeed for
//!   an admin;
//! * a caller without a token gets 401 everywhere except version discovery, the OpenAPI
//!   document and the health check;
//! * a member of A (the positive control) gets the documented status everywhere else.
//!
//! `MATRIX` is the table; `every_served_route_has_exactly_one_row` holds it to the OpenAPI
//! document, to the routes registered in `src/api` and to what the service answers;
//! `the_matrix_agrees_with_the_default_policy` holds every cell to the default rules that decide
//! it; the walk runs on PostgreSQL with JWTs and on SQLite with no-auth identity headers.
//! `cargo nextest run access_matrix_as_markdown --no-capture` prints the table.

use std::collections::{BTreeMap, BTreeSet};

use fleetyard::auth::policy::{Credentials, Enforcer};

use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Map, Value};

use crate::helpers::jwt;
use crate::helpers::{
    at, drain, events_of, fixture, id, spawn_pki, template_body, uuid_of, Backend, Pki, Resp,
    TestApp,
};

// ================================================================================================
// The table
// ================================================================================================

/// What one caller class gets from one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Succeeds with this status (the operation's documented one).
    Succeeds(u16),
    /// Succeeds with this status within the caller's own project; the answer names none of A's
    /// objects.
    Own(u16),
    /// The owner's answer, byte for byte.
    Same,
    /// 404 with Magnum's body: exactly the answer for an object that does not exist, once the
    /// identifiers are swapped.
    Missing,
    /// 403 with Magnum's body "Policy doesn't allow RULE to be performed.".
    Policy(&'static str),
    /// 403 with Magnum's body "Not authorized." (another project's quota or stats).
    NotAuthorized,
    /// Served to anyone, with or without a token, with this status.
    Public(u16),
    /// Not this caller's business in this row (an admin where members are the control).
    Skip,
}

use Expect::*;

/// One operation of the service.
struct Row {
    method: &'static str,
    /// The path template, as the OpenAPI document writes it.
    path: &'static str,
    /// A query string appended to the path (placeholders allowed).
    query: &'static str,
    /// The JSON body of a write; `{placeholder}`s are replaced by JSON-escaped values.
    body: Option<&'static str>,
    owner: Expect,
    other: Expect,
    reader: Expect,
    admin: Expect,
    /// For B's `Missing`: the placeholders naming A's objects, one set per case; every other
    /// placeholder names B's own object of that kind.
    cross: &'static [&'static [&'static str]],
    /// Whether the endpoint takes names where it takes uuids (B's cases and the owner's reads
    /// are then repeated by name).
    names: bool,
    /// Whether the owner's control acts on A's spare object of the kind the path's last
    /// placeholder names
    /// (a DELETE, or a change the main object refuses while clusters use it).
    spare: bool,
    /// For a list: the placeholder of the kind it lists, whose A object B also tries as the
    /// `marker` (the answer must be the missing marker's).
    marker: Option<&'static str>,
    note: &'static str,
}

/// A row with the defaults most rows share: no query, no body, names accepted, no note.
const fn row(method: &'static str, path: &'static str) -> Row {
    Row {
        method,
        path,
        query: "",
        body: None,
        owner: Skip,
        other: Skip,
        reader: Skip,
        admin: Skip,
        cross: &[],
        names: true,
        spare: false,
        marker: None,
        note: "",
    }
}

/// `r`, with the owner's control on a spare object.
const fn spare(r: Row) -> Row {
    Row { spare: true, ..r }
}

const CT: &str = "clustertemplate_ident";
const CL: &str = "cluster_ident";
const NG: &str = "nodegroup_ident";
const FED: &str = "federation_ident";
const MEMBER: &str = "member_ident";
const UPGRADE: &str = "upgrade_template";
const MC: &str = "machine_ident";
const CG: &str = "clustergroup_ident";
const BD: &str = "binding_id";

/// Public: the same answer for every caller, with or without a token.
const fn public(method: &'static str, path: &'static str) -> Row {
    Row {
        owner: Public(200),
        other: Public(200),
        reader: Public(200),
        admin: Public(200),
        ..row(method, path)
    }
}

/// A read of one of A's objects: the owner and A's reader get it, B gets the missing answer.
const fn read(path: &'static str, cross: &'static [&'static [&'static str]]) -> Row {
    Row {
        owner: Succeeds(200),
        other: Missing,
        reader: Same,
        cross,
        ..row("GET", path)
    }
}

/// A list: the owner and A's reader get A's, B gets its own.
const fn list(path: &'static str, marker: &'static str) -> Row {
    Row {
        owner: Succeeds(200),
        other: Own(200),
        reader: Same,
        marker: Some(marker),
        ..row("GET", path)
    }
}

/// A write on (or naming) A's objects: the owner succeeds, A's reader is refused by `rule`,
/// B gets the missing answer.
const fn write(
    method: &'static str,
    path: &'static str,
    body: Option<&'static str>,
    status: u16,
    rule: &'static str,
    cross: &'static [&'static [&'static str]],
) -> Row {
    Row {
        body,
        owner: Succeeds(status),
        other: Missing,
        reader: Policy(rule),
        cross,
        ..row(method, path)
    }
}

/// An admin-only operation: every non-admin gets the 403 of `rule`, the admin `status`.
const fn admin_only(
    method: &'static str,
    path: &'static str,
    body: Option<&'static str>,
    status: u16,
    rule: &'static str,
) -> Row {
    Row {
        body,
        owner: Policy(rule),
        other: Policy(rule),
        reader: Policy(rule),
        admin: Succeeds(status),
        ..row(method, path)
    }
}

const TEMPLATE: &str = "/v1/clustertemplates/{clustertemplate_ident}";
const CLUSTER: &str = "/v1/clusters/{cluster_ident}";
const NODEGROUPS: &str = "/v1/clusters/{cluster_ident}/nodegroups";
const NODEGROUP: &str = "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}";
const MACHINES: &str = "/v1/clusters/{cluster_ident}/machines";
const MACHINE: &str = "/v1/clusters/{cluster_ident}/machines/{machine_ident}";
const FEDERATION: &str = "/v1/federations/{federation_ident}";
const CERTIFICATE: &str = "/v1/certificates/{cluster_ident}";
const QUOTA: &str = "/v1/quotas/{project_id}/{resource}";
const GROUP: &str = "/v1/clustergroups/{clustergroup_ident}";
const GROUP_MEMBERS: &str = "/v1/clustergroups/{clustergroup_ident}/members";
const GROUP_MEMBER: &str = "/v1/clustergroups/{clustergroup_ident}/members/{cluster_ident}";
const GROUP_BINDINGS: &str = "/v1/clustergroups/{clustergroup_ident}/bindings";
const GROUP_BINDING: &str = "/v1/clustergroups/{clustergroup_ident}/bindings/{binding_id}";

/// The access matrix. Owners' DELETEs act on spare objects so that later rows still find A's.
static MATRIX: &[Row] = &[
    // ---- Discovery and health: public ----
    public("GET", "/"),
    public("GET", "/v1"),
    public("GET", "/v1/openapi.json"),
    Row {
        note: "not in the OpenAPI document",
        ..public("GET", "/healthcheck")
    },
    Row {
        note: "not in the OpenAPI document",
        ..public("HEAD", "/healthcheck")
    },
    Row {
        note: "kube-apiserver's health endpoint, not in the OpenAPI document",
        ..public("GET", "/healthz")
    },
    Row {
        note: "kube-apiserver's health endpoint, not in the OpenAPI document",
        ..public("GET", "/readyz")
    },
    Row {
        note: "kube-apiserver's health endpoint, not in the OpenAPI document",
        ..public("GET", "/livez")
    },
    // ---- Cluster templates ----
    list("/v1/clustertemplates", CT),
    list("/v1/clustertemplates/detail", CT),
    Row {
        body: Some(
            r#"{"name": "m-template", "coe": "kubernetes", "image_id": "fedora-coreos-40"}"#,
        ),
        owner: Succeeds(201),
        other: Own(201),
        reader: Policy("clustertemplate:create"),
        note: "names no other object: B creates in its own project",
        ..row("POST", "/v1/clustertemplates")
    },
    read(TEMPLATE, &[&[CT]]),
    spare(Row {
        note: "a template clusters use cannot change (as in Magnum)",
        ..write(
            "PATCH",
            TEMPLATE,
            Some(r#"[{"op": "replace", "path": "/labels", "value": {"matrix": "yes"}}]"#),
            200,
            "clustertemplate:update",
            &[&[CT]],
        )
    }),
    spare(write(
        "DELETE",
        TEMPLATE,
        None,
        204,
        "clustertemplate:delete",
        &[&[CT]],
    )),
    // ---- Clusters ----
    list("/v1/clusters", CL),
    list("/v1/clusters/detail", CL),
    write(
        "POST",
        "/v1/clusters",
        Some(r#"{"name": "m-cluster", "cluster_template_id": "{clustertemplate_ident}"}"#),
        202,
        "cluster:create",
        &[&[CT]],
    ),
    read(CLUSTER, &[&[CL]]),
    write(
        "PATCH",
        CLUSTER,
        Some(r#"[{"op": "replace", "path": "/node_count", "value": 2}]"#),
        202,
        "cluster:update",
        &[&[CL]],
    ),
    // A's spare cluster is CREATE_FAILED (its create always fails); the retry fails it again
    // and the delete below removes it.
    spare(write(
        "POST",
        "/v1/clusters/{cluster_ident}/actions/retry",
        None,
        202,
        "cluster:retry",
        &[&[CL]],
    )),
    // A's spare node group is CREATE_FAILED (an infrastructure refused it); the retry creates
    // it (1.17) and the node group delete below removes it. Its row comes before the upgrade,
    // which takes every group of A's cluster, a failed one too, to UPDATE_COMPLETE.
    spare(write(
        "POST",
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/actions/retry",
        None,
        202,
        "nodegroup:retry",
        &[&[CL, NG], &[NG]],
    )),
    spare(write(
        "DELETE",
        CLUSTER,
        None,
        204,
        "cluster:delete",
        &[&[CL]],
    )),
    Row {
        query: "?force=true",
        owner: Policy("cluster:delete_force"),
        other: Missing,
        reader: Policy("cluster:delete"),
        cross: &[&[CL]],
        note: "microversion 1.18; the admin's forced delete, which removes the record, is \
               tests/integration/deletes.rs",
        ..row("DELETE", CLUSTER)
    },
    write(
        "POST",
        "/v1/clusters/{cluster_ident}/actions/resize",
        Some(r#"{"node_count": 3}"#),
        202,
        "cluster:resize",
        &[&[CL]],
    ),
    write(
        "POST",
        "/v1/clusters/{cluster_ident}/actions/upgrade",
        Some(r#"{"cluster_template": "{upgrade_template}"}"#),
        202,
        "cluster:upgrade",
        &[&[CL], &[UPGRADE]],
    ),
    // ---- Node groups ----
    Row {
        marker: Some(NG),
        ..read(NODEGROUPS, &[&[CL]])
    },
    Row {
        marker: Some(NG),
        ..read("/v1/clusters/{cluster_ident}/nodegroups/detail", &[&[CL]])
    },
    write(
        "POST",
        NODEGROUPS,
        Some(r#"{"name": "m-ng", "node_count": 1}"#),
        202,
        "nodegroup:create",
        &[&[CL]],
    ),
    read(NODEGROUP, &[&[CL, NG], &[NG]]),
    write(
        "PATCH",
        NODEGROUP,
        Some(r#"[{"op": "replace", "path": "/max_node_count", "value": 5}]"#),
        202,
        "nodegroup:update",
        &[&[CL, NG], &[NG]],
    ),
    spare(write(
        "DELETE",
        NODEGROUP,
        None,
        204,
        "nodegroup:delete",
        &[&[CL, NG], &[NG]],
    )),
    Row {
        query: "?force=true",
        owner: Policy("nodegroup:delete_force"),
        other: Missing,
        reader: Policy("nodegroup:delete"),
        cross: &[&[CL, NG]],
        note: "microversion 1.18; the admin's forced delete, which removes the record, is \
               tests/integration/deletes.rs",
        ..row("DELETE", NODEGROUP)
    },
    // ---- Machines (microversion 1.19) ----
    Row {
        marker: Some(MC),
        ..read(MACHINES, &[&[CL]])
    },
    read(MACHINE, &[&[CL, MC], &[MC]]),
    spare(write(
        "DELETE",
        MACHINE,
        None,
        204,
        "machine:delete",
        &[&[CL, MC], &[MC]],
    )),
    // ---- Machine create (microversion 1.20): A's own node group grows by one ----
    write(
        "POST",
        "/v1/clusters/{cluster_ident}/nodegroups/{nodegroup_ident}/machines",
        Some(r#"{}"#),
        202,
        "machine:create",
        &[&[CL, NG], &[NG]],
    ),
    // ---- One machine's changes (microversion 1.20) ----
    write(
        "PATCH",
        MACHINE,
        Some(r#"[{"op": "replace", "path": "/os_image", "value": "fedora-coreos-41"}]"#),
        202,
        "machine:update",
        &[&[CL, MC], &[MC]],
    ),
    write(
        "POST",
        "/v1/clusters/{cluster_ident}/machines/{machine_ident}/actions/replace",
        Some("{}"),
        202,
        "machine:replace",
        &[&[CL, MC], &[MC]],
    ),
    write(
        "POST",
        "/v1/clusters/{cluster_ident}/machines/{machine_ident}/actions/reboot",
        Some("{}"),
        202,
        "machine:reboot",
        &[&[CL, MC], &[MC]],
    ),
    // ---- Federations ----
    list("/v1/federations", FED),
    list("/v1/federations/detail", FED),
    write(
        "POST",
        "/v1/federations",
        Some(
            r#"{"name": "m-fed", "hostcluster_id": "{cluster_ident}", "member_ids": ["{member_ident}"], "properties": {"dns-zone": "m.example."}}"#,
        ),
        202,
        "federation:create",
        &[&[CL], &[MEMBER]],
    ),
    read(FEDERATION, &[&[FED]]),
    write(
        "PATCH",
        FEDERATION,
        Some(r#"[{"op": "add", "path": "/member_ids", "value": "{member_ident}"}]"#),
        202,
        "federation:update",
        &[&[FED], &[MEMBER]],
    ),
    // A's spare federation is CREATE_FAILED (an infrastructure that refused it); the retry
    // creates it (1.17) and the delete below removes it.
    spare(write(
        "POST",
        "/v1/federations/{federation_ident}/actions/retry",
        None,
        202,
        "federation:retry",
        &[&[FED]],
    )),
    spare(write(
        "DELETE",
        FEDERATION,
        None,
        204,
        "federation:delete",
        &[&[FED]],
    )),
    Row {
        query: "?force=true",
        owner: Policy("federation:delete_force"),
        other: Missing,
        reader: Policy("federation:delete"),
        cross: &[&[FED]],
        note: "microversion 1.18; the admin's forced delete, which removes the record, is \
               tests/integration/deletes.rs",
        ..row("DELETE", FEDERATION)
    },
    // ---- Cluster groups (microversion 1.20) ----
    list("/v1/clustergroups", CG),
    Row {
        body: Some(r#"{"name": "m-group", "selector": "env=matrix"}"#),
        owner: Succeeds(201),
        other: Own(201),
        reader: Policy("clustergroup:create"),
        note: "names no other object: B creates in its own project",
        ..row("POST", "/v1/clustergroups")
    },
    read(GROUP, &[&[CG]]),
    write(
        "PATCH",
        GROUP,
        Some(r#"[{"op": "replace", "path": "/description", "value": "matrix"}]"#),
        200,
        "clustergroup:update",
        &[&[CG]],
    ),
    spare(write(
        "DELETE",
        GROUP,
        None,
        204,
        "clustergroup:delete",
        &[&[CG]],
    )),
    read(GROUP_MEMBERS, &[&[CG]]),
    Row {
        note: "B naming A's cluster by uuid for its own group is a proposal that grants nothing \
               until A accepts (tests/integration/cluster_groups.rs)",
        ..write(
            "POST",
            GROUP_MEMBERS,
            Some(r#"{"cluster": "{member_ident}"}"#),
            201,
            "clustergroup:member_add",
            &[&[CG]],
        )
    },
    write(
        "POST",
        "/v1/clustergroups/{clustergroup_ident}/members/{cluster_ident}/actions/accept",
        None,
        200,
        "clustergroup:member_consent",
        &[&[CG, CL], &[CG], &[CL]],
    ),
    write(
        "DELETE",
        GROUP_MEMBER,
        None,
        204,
        "clustergroup:member_delete",
        &[&[CG, CL], &[CG], &[CL]],
    ),
    read(GROUP_BINDINGS, &[&[CG]]),
    write(
        "POST",
        GROUP_BINDINGS,
        Some(r#"{"project_id": "project-e", "access": "read"}"#),
        201,
        "clustergroup:binding_create",
        &[&[CG]],
    ),
    Row {
        names: false,
        ..read(GROUP_BINDING, &[&[CG, BD], &[BD]])
    },
    spare(Row {
        names: false,
        ..write(
            "DELETE",
            GROUP_BINDING,
            None,
            204,
            "clustergroup:binding_delete",
            &[&[CG, BD], &[BD]],
        )
    }),
    // ---- Certificates and credentials ----
    write(
        "POST",
        "/v1/certificates",
        Some(r#"{"cluster_uuid": "{cluster_ident}", "csr": "{csr}"}"#),
        201,
        "certificate:create",
        &[&[CL]],
    ),
    read(CERTIFICATE, &[&[CL]]),
    write(
        "PATCH",
        CERTIFICATE,
        None,
        202,
        "certificate:rotate_ca",
        &[&[CL]],
    ),
    write(
        "PATCH",
        "/v1/credentials/{cluster_ident}",
        None,
        202,
        "credential:rotate",
        &[&[CL]],
    ),
    // ---- Quotas, stats and services: admin-only, or the caller's own project only ----
    admin_only("GET", "/v1/quotas", None, 200, "quota:get_all"),
    admin_only(
        "POST",
        "/v1/quotas",
        Some(r#"{"project_id": "{project_id}", "resource": "Cluster", "hard_limit": 10}"#),
        201,
        "quota:create",
    ),
    Row {
        owner: Succeeds(200),
        other: NotAuthorized,
        reader: Same,
        note: "another project's quota is Magnum's 403 \"Not authorized.\"",
        ..row("GET", QUOTA)
    },
    admin_only(
        "PATCH",
        QUOTA,
        Some(r#"{"hard_limit": 20}"#),
        202,
        "quota:update",
    ),
    admin_only("DELETE", QUOTA, None, 204, "quota:delete"),
    Row {
        query: "?project_id={project_id}",
        owner: Succeeds(200),
        other: NotAuthorized,
        reader: Same,
        note: "asked for project A; another project's stats are Magnum's 403 \"Not authorized.\"",
        ..row("GET", "/v1/stats")
    },
    admin_only("GET", "/v1/mservices", None, 200, "magnum-service:get_all"),
];

// ================================================================================================
// The objects rows name
// ================================================================================================

/// Uuids and names nobody has, one per placeholder, so that swapped answers stay tellable.
const MISSING: &[(&str, &str, &str)] = &[
    (
        CT,
        "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b01",
        "no-such-template",
    ),
    (
        CL,
        "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b02",
        "no-such-cluster",
    ),
    (
        NG,
        "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b03",
        "no-such-nodegroup",
    ),
    (
        FED,
        "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b04",
        "no-such-federation",
    ),
    (
        MEMBER,
        "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b05",
        "no-such-member",
    ),
    (
        UPGRADE,
        "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b06",
        "no-such-upgrade",
    ),
    (
        MC,
        "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b07",
        "no-such-machine",
    ),
    (CG, "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b08", "no-such-group"),
    (
        BD,
        "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b09",
        "no-such-binding",
    ),
];

fn missing(key: &str, by_name: bool) -> String {
    let (_, uuid, name) = MISSING
        .iter()
        .find(|(k, _, _)| *k == key)
        .unwrap_or_else(|| panic!("no missing value for placeholder {key}"));
    if by_name { name } else { uuid }.to_string()
}

#[derive(Clone, Debug)]
struct Obj {
    uuid: String,
    name: String,
}

/// What every placeholder stands for, per caller.
struct World {
    /// A's objects, by placeholder.
    a: BTreeMap<&'static str, Obj>,
    /// A's spare objects, which the owner's DELETEs remove (and its template PATCH changes).
    spare: BTreeMap<&'static str, Obj>,
    /// B's own objects, by placeholder.
    b: BTreeMap<&'static str, String>,
    /// Placeholders with one value for everyone.
    fixed: BTreeMap<&'static str, String>,
    /// Every uuid of A's objects, which no answer to B may name.
    a_uuids: Vec<String>,
}

type Binding = BTreeMap<&'static str, String>;

impl World {
    /// A's objects; a spare row acts on the spare object its last placeholder names.
    fn owner(&self, row: &Row, by_name: bool) -> Binding {
        let mut out = self.fixed.clone();
        let spared = row
            .spare
            .then(|| row.path.rsplit('{').next())
            .flatten()
            .map(|last| last.split('}').next().unwrap_or(last));
        for (k, o) in &self.a {
            let o = match self.spare.get(k) {
                Some(s) if spared == Some(*k) => s,
                _ => o,
            };
            out.insert(k, if by_name { &o.name } else { &o.uuid }.clone());
        }
        out
    }

    /// A's main objects (for the reader, the caller without a token and the view of A).
    fn main(&self) -> Binding {
        let mut out = self.fixed.clone();
        for (k, o) in &self.a {
            out.insert(k, o.uuid.clone());
        }
        out
    }

    /// B's own objects everywhere.
    fn b_own(&self) -> Binding {
        let mut out = self.fixed.clone();
        for (k, v) in &self.b {
            out.insert(k, v.clone());
        }
        out
    }

    /// B's request naming A's objects for the placeholders of `case`, and the same request
    /// naming missing ones; and the (missing, A's) pairs that swap one answer into the other.
    fn b_case(
        &self,
        case: &[&'static str],
        by_name: bool,
    ) -> (Binding, Binding, Vec<(String, String)>) {
        let mut theirs = self.b_own();
        let mut gone = self.b_own();
        let mut pairs = Vec::new();
        for k in case {
            let o = self
                .a
                .get(k)
                .expect("A has an object for every placeholder");
            let a_value = if by_name { &o.name } else { &o.uuid }.clone();
            let m = missing(k, by_name);
            theirs.insert(k, a_value.clone());
            gone.insert(k, m.clone());
            pairs.push((m, a_value));
        }
        (theirs, gone, pairs)
    }
}

/// `template` with each `{key}` replaced; in a body the values are JSON-escaped.
fn bind(template: &str, b: &Binding, json_escaped: bool) -> String {
    let mut out = template.to_string();
    for (k, v) in b {
        let v = if json_escaped {
            let quoted = serde_json::to_string(v).expect("a string serialises");
            quoted[1..quoted.len() - 1].to_string()
        } else {
            v.clone()
        };
        out = out.replace(&format!("{{{k}}}"), &v);
    }
    out
}

/// The request of `row` under `b`: its path with the query, and its body.
fn request_of(row: &Row, b: &Binding) -> (String, Option<Value>) {
    let path = format!("{}{}", bind(row.path, b, false), bind(row.query, b, false));
    let body = row.body.map(|t| {
        let text = bind(t, b, true);
        serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!(
                "{} {}: body template is not JSON: {e}",
                row.method, row.path
            )
        })
    });
    (path, body)
}

fn method(row: &Row) -> Method {
    Method::from_bytes(row.method.as_bytes()).expect("a method")
}

fn name(row: &Row) -> String {
    format!("{} {}{}", row.method, row.path, row.query)
}

// ================================================================================================
// Callers
// ================================================================================================

const JWT_SECRET: &str = "access-matrix-hmac-secret-of-thirty-two-bytes";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Auth {
    /// `auth_strategy = jwt`: each caller carries an HS256 token.
    Jwt,
    /// No-auth mode: each caller carries identity headers.
    Headers,
}

struct Callers {
    owner: HeaderMap,
    other: HeaderMap,
    reader: HeaderMap,
    admin: HeaderMap,
    anonymous: HeaderMap,
}

fn identity(app: &TestApp, auth: Auth, project: &str, user: &str, roles: &[&str]) -> HeaderMap {
    let h = match auth {
        Auth::Headers => app.as_identity(project, user, &roles.join(",")),
        Auth::Jwt => jwt::token_header(&jwt::hs256(JWT_SECRET, user, project, roles)),
    };
    at(&h, "latest")
}

fn callers(app: &TestApp, auth: Auth) -> Callers {
    Callers {
        owner: identity(app, auth, "project-a", "user-a", &["member", "reader"]),
        other: identity(app, auth, "project-b", "user-b", &["member", "reader"]),
        reader: identity(app, auth, "project-a", "reader-a", &["reader"]),
        admin: identity(
            app,
            auth,
            "admin-project",
            "admin-user",
            &["admin", "member", "reader"],
        ),
        anonymous: at(&HeaderMap::new(), "latest"),
    }
}

async fn spawn(backend: Backend, auth: Auth) -> Pki {
    let mut pki = spawn_pki(backend, |s| {
        if auth == Auth::Jwt {
            jwt::hs256_settings(s, JWT_SECRET);
        }
    })
    .await;
    if auth == Auth::Jwt {
        pki.app.headers.clear();
    }
    pki
}

// ================================================================================================
// Project A's objects, and B's
// ================================================================================================

fn created(what: &str, r: Resp, status: u16) -> String {
    assert_eq!(r.status, status, "{what}: {}", r.text);
    uuid_of(&r.body)
}

async fn build_world(pki: &Pki, c: &Callers) -> World {
    let app = &pki.app;
    let a = &c.owner;
    let template = |name: &'static str| {
        let body = template_body(name);
        async move {
            created(
                name,
                app.post_as("/v1/clustertemplates", &body, a).await,
                201,
            )
        }
    };
    let t = template("a-template").await;
    let t_spare = template("a-template-spare").await;
    let t_next = template("a-template-next").await;
    let mut clusters = BTreeMap::new();
    for n in ["a-cluster", "a-member", "a-joiner", "a-spare"] {
        let mut body = json!({"name": n, "cluster_template_id": t});
        if n == "a-spare" {
            // CREATE_FAILED, so that its owner's retry is accepted.
            body["labels"] = json!({"fake_fail": "create"});
        }
        let uuid = created(n, app.post_as("/v1/clusters", &body, a).await, 202);
        clusters.insert(n, uuid);
    }
    drain(&pki.conductor).await;
    let cl = |n: &str| clusters[n].clone();
    // The spare node group and federation are CREATE_FAILED, so that their owner's retries
    // are accepted: a conductor whose infrastructure refuses node group work and federations
    // works their creates.
    let refusing = crate::helpers::conductor(
        app,
        fleetyard::config::FakeDriverSection {
            fail_operations: "update,federation".into(),
            ..crate::helpers::instant()
        },
    );
    let fed = |name: &'static str, members: Vec<String>| {
        let body = json!({"name": name, "hostcluster_id": cl("a-cluster"), "member_ids": members,
                          "properties": {"dns-zone": "example.com."}});
        async move { created(name, app.post_as("/v1/federations", &body, a).await, 202) }
    };
    let f = fed("a-fed", vec![cl("a-member")]).await;
    drain(&pki.conductor).await;
    let f_spare = fed("a-fed-spare", vec![]).await;
    drain(&refusing).await;
    // Node groups last: the failed one leaves A's cluster UPDATE_FAILED (its first row, a
    // node count change, completes it again), and a federation's create waits for its host.
    let ng_path = format!("/v1/clusters/{}/nodegroups", cl("a-cluster"));
    let mut ngs = BTreeMap::new();
    for n in ["a-ng", "a-ng-spare"] {
        let body = json!({"name": n, "node_count": 1});
        ngs.insert(n, created(n, app.post_as(&ng_path, &body, a).await, 202));
        if n == "a-ng-spare" {
            drain(&refusing).await;
        } else {
            drain(&pki.conductor).await;
        }
    }

    // B has one of each of its own, so that requests can mix B's objects with A's.
    let b = &c.other;
    let bt = created(
        "b-template",
        app.post_as("/v1/clustertemplates", &template_body("b-template"), b)
            .await,
        201,
    );
    let bc = created(
        "b-cluster",
        app.post_as(
            "/v1/clusters",
            &json!({"name": "b-cluster", "cluster_template_id": bt}),
            b,
        )
        .await,
        202,
    );
    drain(&pki.conductor).await;
    let b_ngs = app
        .get_as(&format!("/v1/clusters/{bc}/nodegroups"), b)
        .await;
    assert_eq!(b_ngs.status, 200, "{}", b_ngs.text);
    let b_ng = b_ngs.body["nodegroups"][0]["uuid"]
        .as_str()
        .expect("B's cluster has node groups")
        .to_string();
    let bf = created(
        "b-fed",
        app.post_as(
            "/v1/federations",
            &json!({"name": "b-fed", "hostcluster_id": bc, "properties": {"dns-zone": "b.example."}}),
            b,
        )
        .await,
        202,
    );
    drain(&pki.conductor).await;
    // A machine of A's own node group (no other row changes that group's nodes) and one of
    // B's: the group's own when it has one, else a row written for it.
    let a_machine = machine_of(
        app,
        a,
        &cl("a-cluster"),
        &ngs["a-ng"],
        (
            "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3c01",
            "a-machine",
            "project-a",
        ),
    )
    .await;
    // The spare machine: one of A's cluster's default worker group, deleted by its row.
    let spare_machine = machine_of(
        app,
        a,
        &cl("a-cluster"),
        "default-worker",
        (
            "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3c03",
            "a-spare-machine",
            "project-a",
        ),
    )
    .await;
    let b_machine = machine_of(
        app,
        b,
        &bc,
        &b_ng,
        (
            "0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3c02",
            "b-machine",
            "project-b",
        ),
    )
    .await;

    // A's cluster groups: the main one with A's cluster as a member, bound to two other
    // projects (neither of them B, which must see nothing of A's), and a spare one; B's own.
    let group_of = |h: &HeaderMap, name: &'static str, clusters: Vec<String>| {
        let h = h.clone();
        let body = json!({"name": name, "clusters": clusters});
        async move { created(name, app.post_as("/v1/clustergroups", &body, &h).await, 201) }
    };
    let binding_of = |h: &HeaderMap, group: String, grantee: &'static str| {
        let h = h.clone();
        let body = json!({"project_id": grantee, "access": "read"});
        async move {
            created(
                grantee,
                app.post_as(&format!("/v1/clustergroups/{group}/bindings"), &body, &h)
                    .await,
                201,
            )
        }
    };
    let a_group = group_of(a, "a-group", vec![cl("a-cluster")]).await;
    let a_group_spare = group_of(a, "a-group-spare", vec![]).await;
    let a_binding = binding_of(a, a_group.clone(), "project-c").await;
    let a_binding_spare = binding_of(a, a_group.clone(), "project-d").await;
    let b_group = group_of(b, "b-group", vec![]).await;
    let b_binding = binding_of(b, b_group.clone(), "project-c").await;

    let obj = |uuid: &str, name: &str| Obj {
        uuid: uuid.to_string(),
        name: name.to_string(),
    };
    let a_map = BTreeMap::from([
        (CT, obj(&t, "a-template")),
        (CL, obj(&cl("a-cluster"), "a-cluster")),
        (NG, obj(&ngs["a-ng"], "a-ng")),
        (FED, obj(&f, "a-fed")),
        (MEMBER, obj(&cl("a-joiner"), "a-joiner")),
        (UPGRADE, obj(&t_next, "a-template-next")),
        (MC, obj(&a_machine.0, &a_machine.1)),
        (CG, obj(&a_group, "a-group")),
        (BD, obj(&a_binding, &a_binding)),
    ]);
    let spare = BTreeMap::from([
        (CG, obj(&a_group_spare, "a-group-spare")),
        (BD, obj(&a_binding_spare, &a_binding_spare)),
        (CT, obj(&t_spare, "a-template-spare")),
        (CL, obj(&cl("a-spare"), "a-spare")),
        (NG, obj(&ngs["a-ng-spare"], "a-ng-spare")),
        (FED, obj(&f_spare, "a-fed-spare")),
        (MC, obj(&spare_machine.0, &spare_machine.1)),
    ]);
    let b_map = BTreeMap::from([
        (CT, bt.clone()),
        (CL, bc.clone()),
        (NG, b_ng),
        (FED, bf),
        (MEMBER, bc),
        (UPGRADE, bt),
        (MC, b_machine.0),
        (CG, b_group),
        (BD, b_binding),
    ]);
    // What `openstack coe cluster config` and Horizon's Get Cluster Config send (CN=admin,
    // O=system:masters): the default policy signs it for the cluster's members, as Magnum does.
    let csr = fixture("admin-system-masters-rsa2048.csr");
    let fixed = BTreeMap::from([
        ("project_id", "project-a".to_string()),
        ("resource", "Cluster".to_string()),
        ("csr", csr),
    ]);
    let mut a_uuids: Vec<String> = a_map
        .values()
        .chain(spare.values())
        .map(|o| o.uuid.clone())
        .collect();
    a_uuids.extend(clusters.values().cloned());
    a_uuids.sort();
    a_uuids.dedup();
    World {
        a: a_map,
        spare,
        b: b_map,
        fixed,
        a_uuids,
    }
}

/// A machine of `group` of `cluster` as `h` lists it (uuid, name): its first, or, when it has
/// none, a Running worker row written as SQL with `fallback`'s (uuid, name, project).
async fn machine_of(
    app: &TestApp,
    h: &HeaderMap,
    cluster: &str,
    group: &str,
    fallback: (&str, &str, &str),
) -> (String, String) {
    let listed = app
        .get_as(
            &format!("/v1/clusters/{cluster}/machines?nodegroup={group}&limit=1"),
            h,
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    if let Some(m) = listed.body["machines"].get(0) {
        let text = |k: &str| m[k].as_str().expect(k).to_string();
        return (text("uuid"), text("name"));
    }
    let (uuid, name, project) = fallback;
    crate::helpers::exec_sql(
        &app.db.url,
        &[format!(
            "INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, spec, \
             phase, status, created_at) VALUES ('{uuid}', '{name}', 'worker', '{project}', \
             '{cluster}', '{group}', '{{}}', 'Running', '{{}}', CURRENT_TIMESTAMP)"
        )],
    )
    .await;
    (uuid.to_string(), name.to_string())
}

// ================================================================================================
// Assertions
// ================================================================================================

/// Asserts Magnum's error body with `status` and a sentence.
#[track_caller]
fn assert_error_body(what: &str, r: &Resp, status: u16) {
    assert_eq!(r.status, status, "{what}: {}", r.text);
    let e = r.error();
    assert_eq!(e["status"], status, "{what}: {}", r.text);
    assert_eq!(e["code"], "client", "{what}: {}", r.text);
    assert!(
        e["detail"].as_str().is_some_and(|d| !d.is_empty()),
        "{what}: the error must say why: {}",
        r.text
    );
    assert_eq!(r.body["errors"].as_array().map(Vec::len), Some(1), "{what}");
}

/// Asserts that B's answer about A's object is a 404 and exactly B's answer about a missing
/// one, once the identifiers are swapped; both must come from the endpoint, with a sentence.
#[track_caller]
fn assert_like_missing(what: &str, theirs: &Resp, gone: &Resp, pairs: &[(String, String)]) {
    assert_error_body(what, theirs, 404);
    assert_error_body(what, gone, 404);
    let mut expected = gone.text.clone();
    for (m, a) in pairs {
        expected = expected.replace(m, a);
    }
    assert_eq!(
        theirs.text, expected,
        "{what}: B tells A's object from a missing one"
    );
}

#[track_caller]
fn assert_names_none_of_a(what: &str, r: &Resp, world: &World) {
    for uuid in &world.a_uuids {
        assert!(
            !r.text.contains(uuid.as_str()),
            "{what}: the answer names A's object {uuid}: {}",
            r.text
        );
    }
    assert!(
        !r.text.contains("project-a"),
        "{what}: the answer names project A: {}",
        r.text
    );
}

/// Everything A's member reads (every GET row), to compare before and after the others' walk.
async fn a_view(app: &TestApp, c: &Callers, world: &World) -> Vec<(String, u16, String)> {
    let mut out = Vec::new();
    let reads = MATRIX
        .iter()
        .filter(|r| r.method == "GET" && matches!(r.owner, Succeeds(_) | Public(_)));
    for row in reads {
        let (path, _) = request_of(row, &world.main());
        let r = app.get_as(&path, &c.owner).await;
        out.push((name(row), r.status, r.text));
    }
    out
}

/// Every job about A's objects, and every notification about them still in the outbox.
async fn a_trail(app: &TestApp, world: &World) -> Vec<String> {
    let mut out = Vec::new();
    for uuid in &world.a_uuids {
        let jobs = app.store.jobs_for(id(uuid)).await.expect("jobs");
        out.extend(
            jobs.iter()
                .map(|(j, _)| format!("{uuid} job {} {}", j.operation.as_str(), j.id)),
        );
        for (event, outcome, _) in events_of(app, uuid).await {
            out.push(format!("{uuid} event {event} {outcome}"));
        }
    }
    out.sort();
    out
}

/// The answer of one request as `h`.
async fn send(app: &TestApp, row: &Row, b: &Binding, h: &HeaderMap) -> Resp {
    let (path, body) = request_of(row, b);
    app.request(method(row), &path, h, body.as_ref()).await
}

/// The app, its callers and the objects rows name.
struct Scene<'a> {
    app: &'a TestApp,
    c: &'a Callers,
    world: &'a World,
}

/// Checks the answer to a caller whose expectation is not the owner's positive control.
async fn check(s: &Scene<'_>, row: &Row, class: &str, expect: Expect, h: &HeaderMap, b: &Binding) {
    let (app, c, world) = (s.app, s.c, s.world);
    let what = format!("{} as {class}", name(row));
    match expect {
        Skip => {}
        Succeeds(status) => {
            let r = send(app, row, b, h).await;
            assert_eq!(r.status, status, "{what}: {}", r.text);
        }
        Own(status) => {
            let r = send(app, row, b, h).await;
            assert_eq!(r.status, status, "{what}: {}", r.text);
            assert_names_none_of_a(&what, &r, world);
            marker_like_missing(s, row, &what, h).await;
        }
        Same | Public(_) => {
            let mine = send(app, row, b, h).await;
            let owners = send(app, row, b, &c.owner).await;
            if let Public(status) = expect {
                assert_eq!(mine.status, status, "{what}: {}", mine.text);
            }
            assert_eq!(
                (mine.status, &mine.text),
                (owners.status, &owners.text),
                "{what}: the answer must be the owner's"
            );
        }
        Policy(rule) => {
            send(app, row, b, h).await.assert_error(
                403,
                &format!("Policy doesn't allow {rule} to be performed."),
            );
        }
        NotAuthorized => send(app, row, b, h)
            .await
            .assert_error(403, "Not authorized."),
        Missing => {
            assert!(
                !row.cross.is_empty(),
                "{what}: Missing needs the cross cases"
            );
            for case in row.cross {
                for by_name in [false, true] {
                    if by_name && !row.names {
                        continue;
                    }
                    let (theirs, gone, pairs) = world.b_case(case, by_name);
                    let how = format!(
                        "{what}, A's {} by {}",
                        case.join(" and "),
                        if by_name { "name" } else { "uuid" }
                    );
                    let t = send(app, row, &theirs, h).await;
                    let g = send(app, row, &gone, h).await;
                    assert_like_missing(&how, &t, &g, &pairs);
                }
            }
            marker_like_missing(s, row, &what, h).await;
        }
    }
}

/// For a list row: A's object as the `marker` of B's own listing answers as a missing one.
async fn marker_like_missing(s: &Scene<'_>, row: &Row, what: &str, h: &HeaderMap) {
    let Some(k) = row.marker else { return };
    let own = s.world.b_own();
    let (path, _) = request_of(row, &own);
    let theirs = &s.world.a[k].uuid;
    let gone = missing(k, false);
    let t = s.app.get_as(&format!("{path}?marker={theirs}"), h).await;
    let g = s.app.get_as(&format!("{path}?marker={gone}"), h).await;
    let how = format!("{what}, A's {k} as the marker");
    assert_like_missing(&how, &t, &g, &[(gone, theirs.clone())]);
}

/// The body of a positive control: empty for 204; else JSON that is no error body, and a read
/// names the object its path ends with (a list, the object of its kind A has).
async fn assert_succeeded(s: &Scene<'_>, row: &Row, what: &str, r: &Resp, b: &Binding) {
    if r.status == 204 {
        assert_eq!(r.text, "", "{what}");
        return;
    }
    if row.method == "HEAD"
        || matches!(row.path, "/healthcheck" | "/healthz" | "/readyz" | "/livez")
    {
        return;
    }
    assert!(
        r.body.is_object() && r.body.get("errors").is_none(),
        "{what}: {}",
        r.text
    );
    if row.method != "GET" {
        return;
    }
    let named = match row.marker {
        Some(k) => Some(s.world.a[k].uuid.clone()),
        None => row
            .path
            .rsplit_once('{')
            .map(|(_, last)| b[last.split('}').next().unwrap_or(last)].clone()),
    };
    if let Some(v) = named {
        assert!(
            r.text.contains(&v),
            "{what}: the answer must name {v}: {}",
            r.text
        );
    }
}

/// The status the OpenAPI document gives for a successful (method, path), if it lists it.
fn documented(doc: &Value, row: &Row) -> Option<Vec<u16>> {
    let op = &doc["paths"][row.path][row.method.to_lowercase()];
    op["responses"].as_object().map(|r| {
        r.keys()
            .filter_map(|k| k.parse::<u16>().ok())
            .filter(|s| *s < 300)
            .collect()
    })
}

// ================================================================================================
// The walk
// ================================================================================================

async fn walk(backend: Backend, auth: Auth) {
    let pki = spawn(backend, auth).await;
    let app = &pki.app;
    let c = callers(app, auth);
    let world = build_world(&pki, &c).await;
    let doc = app.get_as("/v1/openapi.json", &c.anonymous).await.body;
    let scene = Scene {
        app,
        c: &c,
        world: &world,
    };

    let before = a_view(app, &c, &world).await;
    for (what, status, text) in &before {
        assert_eq!(*status, 200, "A reads its own {what}: {text}");
    }
    let trail_before = a_trail(app, &world).await;
    assert!(!trail_before.is_empty(), "A's objects left jobs and events");

    // ---- B, A's reader and a caller without a token: nothing of A's changes ----
    for row in MATRIX {
        let main = world.main();
        check(
            &scene,
            row,
            "B's member",
            row.other,
            &c.other,
            &world.b_own(),
        )
        .await;
        check(&scene, row, "A's reader", row.reader, &c.reader, &main).await;
        // Without identity headers in no-auth mode, the caller is `[noauth]`'s default
        // identity (an admin): only JWT mode has a caller without a token.
        if auth == Auth::Jwt {
            let what = format!("{} without a token", name(row));
            let r = send(app, row, &main, &c.anonymous).await;
            match row.owner {
                Public(status) => assert_eq!(r.status, status, "{what}: {}", r.text),
                _ => assert_error_body(&what, &r, 401),
            }
        }
        if !matches!(row.method, "GET" | "HEAD") {
            let now = a_view(app, &c, &world).await;
            for (b, a) in before.iter().zip(&now) {
                assert_eq!(b, a, "{}: A's {} changed", name(row), b.0);
            }
        }
    }
    assert_eq!(
        trail_before,
        a_trail(app, &world).await,
        "B or A's reader queued work or events about A's objects"
    );

    // ---- The owner's positive control, and the admin's on admin-only rows ----
    for row in MATRIX {
        let what = name(row);
        for (class, expect, h) in [
            ("A's member", row.owner, &c.owner),
            ("the admin", row.admin, &c.admin),
        ] {
            let b = world.owner(row, false);
            match expect {
                Succeeds(status) => {
                    if let Some(statuses) = documented(&doc, row) {
                        assert!(
                            statuses.contains(&status),
                            "{what}: {status} is not a documented answer ({statuses:?})"
                        );
                    }
                    let r = send(app, row, &b, h).await;
                    assert_eq!(r.status, status, "{what} as {class}: {}", r.text);
                    assert_succeeded(&scene, row, &format!("{what} as {class}"), &r, &b).await;
                    if row.method == "GET" && row.names && class == "A's member" {
                        let by_name = send(app, row, &world.owner(row, true), h).await;
                        assert_eq!(
                            (by_name.status, &by_name.text),
                            (r.status, &r.text),
                            "{what} as {class}: by name as by uuid"
                        );
                    }
                    drain(&pki.conductor).await;
                    if row.method == "DELETE" && row.spare {
                        let (path, _) = request_of(row, &b);
                        let gone = app.get_as(&path, h).await;
                        assert_error_body(&format!("{what}: then GET"), &gone, 404);
                    }
                }
                Public(status) => {
                    let r = send(app, row, &b, h).await;
                    assert_eq!(r.status, status, "{what} as {class}: {}", r.text);
                }
                other => check(&scene, row, class, other, h, &b).await,
            }
        }
    }
}

#[tokio::test]
async fn every_caller_class_gets_its_answer_from_every_row_on_postgres_with_jwts() {
    walk(Backend::Postgres, Auth::Jwt).await;
}

#[tokio::test]
async fn every_caller_class_gets_its_answer_from_every_row_on_sqlite_with_identity_headers() {
    walk(Backend::Sqlite, Auth::Headers).await;
}

// ================================================================================================
// Coverage: every served route has exactly one row
// ================================================================================================

/// `{anything}` -> `{}`, so that templates compare whatever their parameters are called.
fn shape(path: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for ch in path.chars() {
        match ch {
            '{' => {
                inside = true;
                out.push_str("{}");
            }
            '}' => inside = false,
            _ if !inside => out.push(ch),
            _ => {}
        }
    }
    out
}

const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// The routes registered in `src/api` and `src/api/v1` (`web::resource("..")` followed by
/// `.route(web::get()..)`, and `.route("..", web::get()..)`), as (METHOD, path, file). The
/// source is read with its whitespace removed, so a call split over lines reads the same.
fn registered_routes() -> Vec<(String, String, String)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/src/api");
    let mut out = routes_in(root, "", &BTreeMap::new());
    let v1 = format!("{root}/v1");
    out.extend(routes_in(&v1, "/v1", &module_scopes(&v1)));
    out
}

/// The routes registered by the modules of one folder of `src/api`, whose `mod.rs` routes sit
/// under `base`; `scopes` says in which scope each module's configure functions are mounted.
fn routes_in(
    dir: &str,
    base: &'static str,
    scopes: &BTreeMap<String, String>,
) -> Vec<(String, String, String)> {
    let folder = dir.rsplit("/src/").next().unwrap_or(dir).to_string();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("src/api")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text: String = std::fs::read_to_string(&file)
            .expect("source")
            .split_whitespace()
            .collect();
        let file = file
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        let shown = format!("{folder}/{file}");
        let mut marks: Vec<(usize, &str)> =
            ["web::scope(\"/v1\")", "web::resource(", ".route(", "pubfn"]
                .iter()
                .flat_map(|pat| text.match_indices(pat).collect::<Vec<_>>())
                .collect();
        marks.sort();
        // Resource modules are configured inside the `/v1` scope, most inside a scope of their
        // own, a module's configure functions perhaps in different scopes (mod.rs says which);
        // mod.rs says where `/v1` starts.
        let module = file.trim_end_matches(".rs");
        let scoped = scopes
            .get(&format!("{module}::configure"))
            .map(String::as_str);
        let mut prefix = match (file.as_str(), scoped) {
            ("mod.rs", _) => base,
            (_, Some(scope)) => scope,
            (_, None) => "/v1",
        };
        let mut resource = None;
        for (at, mark) in marks {
            let rest = &text[at + mark.len()..];
            match mark {
                ".route(" => {
                    let (path, rest) = match literal(rest) {
                        Some((p, rest)) => (Some(p), rest.strip_prefix(',').unwrap_or(rest)),
                        None => (resource.clone(), rest),
                    };
                    let method = rest
                        .strip_prefix("web::")
                        .and_then(|r| r.split_once("()"))
                        .map(|(m, _)| m.to_uppercase())
                        .filter(|m| METHODS.contains(&m.as_str()));
                    if let (Some(m), Some(p)) = (method, path) {
                        out.push((m, format!("{prefix}{p}"), shown.clone()));
                    }
                }
                "web::resource(" => resource = literal(rest).map(|(p, _)| p),
                "pubfn" => {
                    let name = rest.split('(').next().unwrap_or_default();
                    if let Some(scope) = scopes.get(&format!("{module}::{name}")) {
                        prefix = scope;
                    }
                }
                _ => prefix = "/v1",
            }
        }
    }
    out
}

/// The `/v1` scope each configure function of a resource module is mounted in by
/// `src/api/v1/mod.rs` (`web::scope("/clusters").configure(clusters::configure)`), a scope whose
/// path starts with a parameter (`web::scope("/{cluster_ident}")`) nested in the scope before
/// it: `module::function` to its full prefix.
fn module_scopes(dir: &str) -> BTreeMap<String, String> {
    let text: String = std::fs::read_to_string(format!("{dir}/mod.rs"))
        .expect("src/api/v1/mod.rs")
        .split_whitespace()
        .collect();
    let mut out = BTreeMap::new();
    let mut outer = "/v1".to_string();
    for (at, mark) in text.match_indices("web::scope(") {
        let Some((scope, mut rest)) = literal(&text[at + mark.len()..]) else {
            continue;
        };
        if scope == "/v1" {
            continue;
        }
        let full = if scope.starts_with("/{") {
            format!("{outer}{scope}")
        } else {
            outer = format!("/v1{scope}");
            outer.clone()
        };
        rest = rest.strip_prefix(')').unwrap_or(rest);
        while let Some(after) = rest.strip_prefix(".configure(") {
            let Some((function, tail)) = after.split_once(')') else {
                break;
            };
            out.insert(function.to_string(), full.clone());
            rest = tail;
        }
    }
    assert!(
        out.contains_key("clusters::configure") && out.contains_key("nodegroups::configure"),
        "src/api/v1/mod.rs mounts the clusters and node groups modules in scopes: {out:?}"
    );
    out
}

/// The string literal `text` starts with, and what follows it.
fn literal(text: &str) -> Option<(String, &str)> {
    let rest = text.strip_prefix('"')?;
    let end = rest.find('"')?;
    Some((rest[..end].to_string(), &rest[end + 1..]))
}

#[tokio::test]
async fn every_served_route_has_exactly_one_row() {
    let pki = spawn(Backend::Sqlite, Auth::Headers).await;
    let app = &pki.app;
    let admin = at(&app.admin(), "latest");
    let doc = app.get("/v1/openapi.json").await.body;

    // One row per operation: a route, or a route with the query that makes it another
    // operation (a forced delete).
    let mut operations: BTreeMap<(String, String), usize> = BTreeMap::new();
    for row in MATRIX {
        *operations
            .entry((row.method.to_string(), shape(row.path) + row.query))
            .or_default() += 1;
    }
    let mut problems = Vec::new();
    for ((m, p), n) in &operations {
        if *n > 1 {
            problems.push(format!(
                "{m} {p} has {n} rows in the access matrix; it must have one."
            ));
        }
    }
    let rows: BTreeMap<(String, String), usize> = MATRIX
        .iter()
        .map(|row| ((row.method.to_string(), shape(row.path)), 1))
        .collect();

    let mut served: BTreeMap<(String, String), String> = BTreeMap::new();
    for (path, item) in doc["paths"].as_object().expect("the document has paths") {
        for m in METHODS {
            if item.get(m.to_lowercase()).is_some() {
                served.insert((m.to_string(), shape(path)), "the OpenAPI document".into());
            }
        }
    }
    let registered = registered_routes();
    assert!(
        registered.len() >= 40,
        "the scan of src/api found only {} routes; it no longer reads the route code",
        registered.len()
    );
    for (m, p, file) in registered {
        served
            .entry((m, shape(&p)))
            .or_insert_with(|| format!("src/{file}"));
    }
    for ((m, p), source) in &served {
        if !rows.contains_key(&(m.clone(), p.clone())) {
            problems.push(format!(
                "{m} {p} is served ({source}) but has no row in the access matrix."
            ));
        }
    }
    for (m, p) in rows.keys() {
        if !served.contains_key(&(m.clone(), p.clone())) {
            problems.push(format!(
                "The access matrix has a row for {m} {p}, which the service does not serve."
            ));
        }
    }

    // What the service answers: on every path of the matrix, every method without a row is
    // refused by the router (405, or the framework's 404), whatever the source scan saw.
    let paths: BTreeSet<&str> = MATRIX.iter().map(|r| r.path).collect();
    for path in paths {
        let concrete = MISSING.iter().fold(path.to_string(), |p, (k, uuid, _)| {
            p.replace(&format!("{{{k}}}"), uuid)
        });
        let concrete = concrete
            .replace("{project_id}", "project-x")
            .replace("{resource}", "Cluster");
        for m in METHODS {
            if rows.contains_key(&(m.to_string(), shape(path))) {
                continue;
            }
            let r = app
                .request(
                    Method::from_bytes(m.as_bytes()).expect("method"),
                    &concrete,
                    &admin,
                    None,
                )
                .await;
            // The framework's 404 has an empty detail (and a HEAD answer no body at all).
            let framework = r.error()["detail"] == "" || (*m == "HEAD" && r.text.is_empty());
            let refused = r.status == 405 || (r.status == 404 && framework);
            if !refused {
                problems.push(format!(
                    "{m} {path} answers {} but has no row in the access matrix: {}",
                    r.status, r.text
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ================================================================================================
// The table agrees with the default policy
// ================================================================================================

/// The rules that decide a request about the caller's own project on (method, path): those the
/// defaults list for it, less the variants for other projects and publishing (the matrix signs
/// a privileged subject, so certificate:create_privileged decides too).
fn deciding_rules(method: &str, path: &str, query: &str) -> Vec<&'static str> {
    // A row with a query (a forced delete) is decided by the rules of its route and those of
    // the route with that query.
    let with_query = shape(path) + query;
    Enforcer::defaults()
        .iter()
        .filter(|d| {
            d.operations.iter().any(|(m, p)| {
                *m == method
                    && (shape(p) == shape(path) || (!query.is_empty() && shape(p) == with_query))
            })
        })
        .map(|d| d.name)
        .filter(|n| !n.ends_with("_all_projects") && *n != "clustertemplate:publish")
        .collect()
}

#[test]
fn the_matrix_agrees_with_the_default_policy() {
    let enforcer = Enforcer::with_defaults();
    let creds = |user: &str, project: &str, roles: &[&str], is_admin: bool| Credentials {
        user_id: Some(user.into()),
        project_id: Some(project.into()),
        roles: roles.iter().map(|r| r.to_string()).collect(),
        is_admin,
        ..Credentials::default()
    };
    let classes = [
        (
            "A's member",
            creds("user-a", "project-a", &["member", "reader"], false),
        ),
        (
            "B's member",
            creds("user-b", "project-b", &["member", "reader"], false),
        ),
        (
            "A's reader",
            creds("reader-a", "project-a", &["reader"], false),
        ),
        (
            "the admin",
            creds(
                "admin-user",
                "admin-project",
                &["admin", "member", "reader"],
                true,
            ),
        ),
    ];
    // A's objects for everyone but B, whose refusals come before any lookup (its own project).
    let target = |class: &str| {
        let project = if class == "B's member" {
            "project-b"
        } else {
            "project-a"
        };
        let user = if class == "B's member" {
            "user-b"
        } else {
            "user-a"
        };
        let mut t = Map::new();
        t.insert("project_id".into(), json!(project));
        t.insert("user_id".into(), json!(user));
        t
    };
    let mut problems = Vec::new();
    for row in MATRIX {
        if matches!(row.owner, Same | Own(_) | Missing | Skip) {
            problems.push(format!(
                "{}: the owner's cell is the reference: it succeeds, is refused or is public.",
                name(row)
            ));
        }
        let rules = deciding_rules(row.method, row.path, row.query);
        let public = matches!(row.owner, Public(_));
        if public != rules.is_empty() {
            problems.push(format!(
                "{}: public rows have no policy rule, every other row has one ({rules:?}).",
                name(row)
            ));
            continue;
        }
        let cells = [row.owner, row.other, row.reader, row.admin];
        for ((class, cred), expect) in classes.iter().zip(cells) {
            let allowed = |rule: &str| enforcer.enforce(rule, &target(class), cred);
            match expect {
                Succeeds(_) | Same => {
                    for rule in rules.iter().filter(|r| !allowed(r)) {
                        problems.push(format!(
                            "{}: {class} succeeds, but the default {rule} refuses it.",
                            name(row)
                        ));
                    }
                }
                Policy(rule) => {
                    if !rules.contains(&rule) {
                        problems.push(format!(
                            "{}: {rule} does not protect it (its rules: {rules:?}).",
                            name(row)
                        ));
                    } else if allowed(rule) {
                        problems.push(format!(
                            "{}: {class} is refused by {rule}, which allows it.",
                            name(row)
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ================================================================================================
// The table, for quoting
// ================================================================================================

fn cell(e: Expect) -> String {
    match e {
        Succeeds(s) => s.to_string(),
        Own(s) => format!("{s}, own project only"),
        Same => "as the owner".into(),
        Missing => "404, as if missing".into(),
        Policy(rule) => format!("403 (`{rule}`)"),
        NotAuthorized => "403 (Not authorized.)".into(),
        Public(s) => s.to_string(),
        Skip => "—".into(),
    }
}

fn markdown() -> String {
    let mut out = String::from(
        "| Method | Path | A's member | B's member | A's reader | admin | no token | note |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for row in MATRIX {
        let mut other = cell(row.other);
        if row.marker.is_some() {
            other.push_str("; A's object as `marker`: 404, as if missing");
        }
        let note = match (row.spare, row.note) {
            (false, n) => n.to_string(),
            (true, "") => "the owner acts on a spare object".to_string(),
            (true, n) => format!("the owner acts on a spare object: {n}"),
        };
        let anonymous = match row.owner {
            Public(s) => s.to_string(),
            _ => "401".into(),
        };
        out.push_str(&format!(
            "| {} | `{}{}` | {} | {} | {} | {} | {} | {} |\n",
            row.method,
            row.path,
            row.query,
            cell(row.owner),
            other,
            cell(row.reader),
            cell(row.admin),
            anonymous,
            note
        ));
    }
    out
}

#[test]
fn access_matrix_as_markdown() {
    let table = markdown();
    println!("{table}");
    assert_eq!(table.lines().count(), MATRIX.len() + 2);
}
