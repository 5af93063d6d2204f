//! Server-side printing: `meta.k8s.io/v1` `Table` for `kubectl get` (list, get and watch), with
//! kube-apiserver's Age formatting (`duration.HumanDuration`).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::objects::{Cluster, ClusterProfile, Time, API_VERSION, KIND};
use super::profile_view::{HEALTHY_CONDITION, JOINED_CONDITION};
use super::status::KubeError;
use crate::store::RegistryEntry;

/// Whether an `Accept` header asks for `as=Table;v=v1;g=meta.k8s.io` (parameters in any order).
pub fn wants_table(accept: &str) -> bool {
    accept.split(',').take(32).any(|range| {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("");
        let (mut a, mut v, mut g) = (false, false, false);
        for p in parts.take(16) {
            match p.split_once('=').map(|(k, x)| (k.trim(), x.trim())) {
                Some(("as", "Table")) => a = true,
                Some(("v", "v1")) => v = true,
                Some(("g", "meta.k8s.io")) => g = true,
                _ => {}
            }
        }
        media.eq_ignore_ascii_case("application/json") && a && v && g
    })
}

/// `?includeObject=`: what each row's `object` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    None,
    /// `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(v: Option<&str>) -> Result<Self, KubeError> {
        match v {
            None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(KubeError::bad_request(format!(
                "includeObject: Unsupported value: {}: supported values: \"Metadata\", \"None\", \"Object\"",
                super::status::quote(&other.chars().take(64).collect::<String>())
            ))),
        }
    }
}

pub(super) fn column(
    name: &str,
    ty: &str,
    format: &str,
    description: &str,
    priority: i32,
) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": description, "priority": priority})
}

/// The columns of `kubectl get clusters` (priority 1 only with `-o wide`).
pub fn cluster_columns() -> Value {
    json!([
        column("Name", "string", "name", "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated.", 0),
        column("Status", "string", "", "The status of the cluster (Magnum's status, e.g. CREATE_COMPLETE).", 0),
        column("Health", "string", "", "The health of the cluster as last observed (HEALTHY, UNHEALTHY, UNKNOWN).", 0),
        column("Endpoint", "string", "", "The first spec.kubernetesApiEndpoints.serverEndpoints[].serverAddress.", 0),
        column("Age", "date", "", "CreationTimestamp is a timestamp representing the server time when this object was created.", 0),
        column("Driver", "string", "", "The driver that manages the cluster.", 1),
        column("Nodes", "integer", "", "The number of nodes of the cluster.", 1),
        column("COE Version", "string", "", "The version of the container orchestration engine.", 1),
        column("UID", "string", "", "UID is the unique in time and space value for this object.", 1),
    ])
}

/// The columns of `kubectl get clusterprofiles`.
pub fn profile_columns() -> Value {
    json!([
        column("Name", "string", "name", "Name must be unique within a namespace.", 0),
        column("Manager", "string", "", "spec.clusterManager.name: the manager that owns the profile.", 0),
        column("Healthy", "string", "", "The status of the ControlPlaneHealthy condition.", 0),
        column("Joined", "string", "", "The status of the Joined condition.", 0),
        column("Version", "string", "", "status.version.kubernetes: the Kubernetes version of the cluster.", 0),
        column("Age", "date", "", "CreationTimestamp is a timestamp representing the server time when this object was created.", 0),
    ])
}

/// What the lead fills for one cluster row.
#[derive(Debug, Clone, Copy)]
pub struct TableRow<'a> {
    pub object: &'a Cluster,
    pub status: &'a str,
    pub health: &'a str,
    pub driver: &'a str,
    pub nodes: Option<i64>,
    pub coe_version: &'a str,
}

/// `""` prints as nothing; kubectl prints a JSON null as `<none>`.
pub(super) fn cell(s: &str) -> Value {
    if s.is_empty() {
        Value::Null
    } else {
        json!(s)
    }
}

fn cluster_value(c: &Cluster) -> Value {
    let mut v = serde_json::to_value(c).unwrap_or_else(|_| json!({}));
    if c.api_version.is_empty() {
        v["apiVersion"] = json!(API_VERSION);
    }
    if c.kind.is_empty() {
        v["kind"] = json!(KIND);
    }
    v
}

/// `rows[].object` of one object (`full` = the whole object as served).
pub(super) fn row_object(include: IncludeObject, full: Value) -> Option<Value> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Object => Some(full),
        IncludeObject::Metadata => Some(json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": full.get("metadata").cloned().unwrap_or_else(|| json!({})),
        })),
    }
}

pub(super) fn row(cells: Vec<Value>, object: Option<Value>) -> Value {
    let mut r = json!({"cells": cells});
    if let Some(o) = object {
        r["object"] = o;
    }
    r
}

/// One row of the cluster table.
pub fn cluster_row(r: &TableRow, include: IncludeObject, now: DateTime<Utc>) -> Value {
    let c = r.object;
    let endpoint = c
        .spec
        .kubernetes_api_endpoints
        .as_ref()
        .and_then(|e| e.server_endpoints.first())
        .map(|e| e.server_address.as_str())
        .unwrap_or("");
    let cells = vec![
        json!(c.metadata.name.as_deref().unwrap_or("")),
        cell(r.status),
        cell(r.health),
        cell(endpoint),
        json!(age(c.metadata.creation_timestamp.as_ref(), now)),
        cell(r.driver),
        r.nodes.map_or(Value::Null, |n| json!(n)),
        cell(r.coe_version),
        cell(c.metadata.uid.as_deref().unwrap_or("")),
    ];
    row(cells, row_object(include, cluster_value(c)))
}

/// One row of the cluster-profile table, from the served `ClusterProfile` object.
pub fn profile_row(profile: &ClusterProfile, include: IncludeObject, now: DateTime<Utc>) -> Value {
    let status = profile.status.as_ref();
    let condition = |ty: &str| {
        status
            .and_then(|s| s.condition_status(ty))
            .map_or(Value::Null, |s| json!(s))
    };
    let cells = vec![
        json!(profile.metadata.name.as_deref().unwrap_or("")),
        cell(&profile.spec.cluster_manager.name),
        condition(HEALTHY_CONDITION),
        condition(JOINED_CONDITION),
        cell(status.map_or("", |s| s.version.kubernetes.as_str())),
        json!(age(profile.metadata.creation_timestamp.as_ref(), now)),
    ];
    let full = serde_json::to_value(profile).unwrap_or_else(|_| json!({}));
    row(cells, row_object(include, full))
}

/// A `Table` of `rows` (built by `cluster_row` / `profile_row`) under `columns`;
/// `continue_token` empty when the list is complete.
pub fn table(
    columns: Value,
    rows: Vec<Value>,
    resource_version: &str,
    continue_token: &str,
) -> Value {
    let mut metadata = json!({"resourceVersion": resource_version});
    if !continue_token.is_empty() {
        metadata["continue"] = json!(continue_token);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// The Table of a list or get of clusters.
pub fn cluster_table(
    rows: &[TableRow],
    include: IncludeObject,
    resource_version: &str,
    continue_token: &str,
    now: DateTime<Utc>,
) -> Value {
    let rows = rows.iter().map(|r| cluster_row(r, include, now)).collect();
    table(cluster_columns(), rows, resource_version, continue_token)
}

/// The Table of a list or get of cluster profiles.
pub fn profile_table(
    profiles: &[ClusterProfile],
    include: IncludeObject,
    resource_version: &str,
    continue_token: &str,
    now: DateTime<Utc>,
) -> Value {
    let rows = profiles
        .iter()
        .map(|p| profile_row(p, include, now))
        .collect();
    table(profile_columns(), rows, resource_version, continue_token)
}

/// The object of one watch event when the watch asked for Table: a one-row Table, with the
/// columns only when `with_columns` (the first event; kubectl reuses the last ones).
pub fn watch_event_table(
    columns: Value,
    row: Value,
    resource_version: &str,
    with_columns: bool,
) -> Value {
    let columns = if with_columns { columns } else { json!([]) };
    table(columns, vec![row], resource_version, "")
}

/// Kubernetes' `duration.HumanDuration` of a span in milliseconds (apimachinery
/// `pkg/util/duration`): `45s`, `2m5s`, `15m`, `3h12m`, `10h`, `3d4h`, `20d`, `2y30d`, `9y`.
pub fn human_duration(millis: i64) -> String {
    // Go truncates toward zero at each step (`int(d.Seconds())`, `d / time.Minute`).
    let seconds = millis / 1000;
    if seconds < -1 {
        return "<invalid>".into();
    } else if seconds < 0 {
        return "0s".into();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        return format!("{hours}h{m}m");
    } else if hours < 48 {
        return format!("{hours}h");
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{h}h", hours / 24);
    } else if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{dy}d", hours / 24 / 365);
    }
    format!("{}y", hours / 24 / 365)
}

/// The Age cell: `<unknown>` without a (parseable) creation timestamp, as kubectl's printers.
pub fn age(creation_timestamp: Option<&Time>, now: DateTime<Utc>) -> String {
    match creation_timestamp {
        Some(t) => human_duration(now.timestamp_millis().saturating_sub(t.0.as_millisecond())),
        None => "<unknown>".into(),
    }
}

/// A row of the `Table` answer.
pub(super) fn table_row<'a>(e: &'a RegistryEntry, object: &'a Cluster) -> TableRow<'a> {
    TableRow {
        object,
        status: e.cluster.status.as_str(),
        health: e
            .cluster
            .health_status
            .map(|h| h.as_str())
            .unwrap_or("UNKNOWN"),
        driver: &e.driver,
        nodes: Some(e.node_count),
        coe_version: e.cluster.coe_version.as_deref().unwrap_or(""),
    }
}

#[cfg(test)]
mod tests {
    use super::super::objects::{KubernetesApiEndpoints, ObjectMeta, ServerAddressByClientCidr};
    use super::*;

    const S: i64 = 1000;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;
    const D: i64 = 24 * H;

    #[test]
    fn human_duration_follows_apimachinery() {
        for (ms, want) in [
            (-2 * S, "<invalid>"),
            (-S - 500, "0s"),
            (-S, "0s"),
            (0, "0s"),
            (45 * S, "45s"),
            (119 * S, "119s"),
            (2 * M, "2m"),
            (2 * M + 5 * S, "2m5s"),
            (9 * M + 59 * S, "9m59s"),
            (10 * M + 30 * S, "10m"),
            (179 * M, "179m"),
            (3 * H, "3h"),
            (3 * H + 12 * M, "3h12m"),
            (7 * H + 59 * M, "7h59m"),
            (8 * H + 30 * M, "8h"),
            (47 * H, "47h"),
            (2 * D, "2d"),
            (3 * D + 4 * H, "3d4h"),
            (7 * D + 23 * H, "7d23h"),
            (8 * D + 5 * H, "8d"),
            (729 * D, "729d"),
            (730 * D, "2y"),
            (2 * 365 * D + 30 * D, "2y30d"),
            (8 * 365 * D + 100 * D, "8y"),
        ] {
            assert_eq!(human_duration(ms), want, "{ms} ms");
        }
    }

    #[test]
    fn wants_table_finds_the_table_media_range_in_any_order() {
        assert!(wants_table("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"));
        assert!(wants_table("application/json;g=meta.k8s.io;v=v1;as=Table"));
        assert!(!wants_table(
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
        ));
        assert!(!wants_table("application/json"));
        assert!(!wants_table(""));
    }

    fn cluster() -> Cluster {
        Cluster {
            metadata: ObjectMeta {
                name: Some("alpha".into()),
                namespace: Some("p1".into()),
                uid: Some("u-1".into()),
                resource_version: Some("101".into()),
                creation_timestamp: "2026-11-22T01:54:51Z".parse().ok().map(Time),
                labels: Some([("env".to_string(), "prod".to_string())].into()),
                ..Default::default()
            },
            spec: super::super::objects::ClusterSpec {
                kubernetes_api_endpoints: Some(KubernetesApiEndpoints {
                    server_endpoints: vec![ServerAddressByClientCidr {
                        client_cidr: "0.0.0.0/0".into(),
                        server_address: "https://10.0.0.1:6443".into(),
                    }],
                    ca_bundle: None,
                }),
                auth_info: None,
            },
            ..Default::default()
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-22T01:59:51Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    #[test]
    fn a_cluster_table_has_the_columns_cells_and_partial_metadata() {
        let c = cluster();
        let rows = [TableRow {
            object: &c,
            status: "CREATE_COMPLETE",
            health: "HEALTHY",
            driver: "kubernetes",
            nodes: Some(3),
            coe_version: "v1.32.1",
        }];
        let t = cluster_table(&rows, IncludeObject::Metadata, "102", "", now());
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"], json!({"resourceVersion": "102"}));
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .map(|cs| cs.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            names,
            vec![
                "Name",
                "Status",
                "Health",
                "Endpoint",
                "Age",
                "Driver",
                "Nodes",
                "COE Version",
                "UID"
            ]
        );
        assert_eq!(t["columnDefinitions"][0]["format"], "name");
        assert_eq!(t["columnDefinitions"][4]["type"], "date");
        assert_eq!(t["columnDefinitions"][5]["priority"], 1);
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "alpha",
                "CREATE_COMPLETE",
                "HEALTHY",
                "https://10.0.0.1:6443",
                "5m",
                "kubernetes",
                3,
                "v1.32.1",
                "u-1"
            ])
        );
        assert_eq!(
            t["rows"][0]["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"name": "alpha", "namespace": "p1", "uid": "u-1", "resourceVersion": "101",
                    "creationTimestamp": "2026-11-22T01:54:51Z", "labels": {"env": "prod"}}})
        );
    }

    #[test]
    fn include_object_none_object_and_continue() {
        let c = cluster();
        let rows = [TableRow {
            object: &c,
            status: "",
            health: "",
            driver: "",
            nodes: None,
            coe_version: "",
        }];
        let t = cluster_table(&rows, IncludeObject::None, "7", "tok", now());
        assert!(t["rows"][0].get("object").is_none());
        assert_eq!(t["metadata"]["continue"], "tok");
        assert_eq!(t["rows"][0]["cells"][1], Value::Null);
        assert_eq!(t["rows"][0]["cells"][6], Value::Null);
        let t = cluster_table(&rows, IncludeObject::Object, "7", "", now());
        assert_eq!(t["rows"][0]["object"]["kind"], "Cluster");
        assert_eq!(
            t["rows"][0]["object"]["apiVersion"],
            "clusterregistry.k8s.io/v1alpha1"
        );
        assert_eq!(
            t["rows"][0]["object"]["spec"]["kubernetesApiEndpoints"]["serverEndpoints"][0]
                ["clientCIDR"],
            "0.0.0.0/0"
        );
        assert_eq!(
            IncludeObject::parse(None).ok(),
            Some(IncludeObject::Metadata)
        );
        assert_eq!(
            IncludeObject::parse(Some("Object")).ok(),
            Some(IncludeObject::Object)
        );
        assert!(IncludeObject::parse(Some("All")).is_err());
    }

    #[test]
    fn a_watch_event_is_a_one_row_table() {
        let c = cluster();
        let r = cluster_row(
            &TableRow {
                object: &c,
                status: "s",
                health: "h",
                driver: "d",
                nodes: Some(1),
                coe_version: "v",
            },
            IncludeObject::Metadata,
            now(),
        );
        let e = watch_event_table(cluster_columns(), r.clone(), "119", false);
        assert_eq!(e["columnDefinitions"], json!([]));
        assert_eq!(e["rows"], json!([r]));
        assert_eq!(e["metadata"], json!({"resourceVersion": "119"}));
    }

    #[test]
    fn a_profile_table_reads_manager_conditions_and_version() {
        let p: ClusterProfile = serde_json::from_value(json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
            "metadata": {"name": "alpha", "namespace": "p1", "creationTimestamp": "2026-11-20T01:59:51Z"},
            "spec": {"displayName": "alpha", "clusterManager": {"name": "fleetyard"}},
            "status": {"conditions": [
                {"type": "ControlPlaneHealthy", "status": "True", "reason": "Healthy",
                 "message": "health HEALTHY", "lastTransitionTime": "2026-11-20T01:59:51Z"},
                {"type": "Joined", "status": "False", "reason": "NotReady",
                 "message": "cluster status CREATE_IN_PROGRESS",
                 "lastTransitionTime": "2026-11-20T01:59:51Z"}],
                "version": {"kubernetes": "v1.32.1"}}}))
        .expect("a ClusterProfile");
        let t = profile_table(
            std::slice::from_ref(&p),
            IncludeObject::Metadata,
            "5",
            "",
            now(),
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["alpha", "fleetyard", "True", "False", "v1.32.1", "2d"])
        );
        assert_eq!(t["columnDefinitions"][1]["name"], "Manager");
        assert_eq!(t["rows"][0]["object"]["metadata"]["name"], "alpha");
        let t = profile_table(&[p], IncludeObject::Object, "5", "", now());
        assert_eq!(
            t["rows"][0]["object"]["status"]["conditions"][1]["message"],
            "cluster status CREATE_IN_PROGRESS"
        );
        assert_eq!(age(None, now()), "<unknown>");
    }

    #[test]
    fn a_profile_without_status_or_version_has_empty_cells() {
        let p = ClusterProfile {
            metadata: ObjectMeta {
                name: Some("gone".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let t = profile_table(&[p], IncludeObject::None, "5", "", now());
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["gone", null, null, null, null, "<unknown>"])
        );
    }
}
