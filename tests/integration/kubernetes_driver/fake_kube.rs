//! A fake Kubernetes API server for the kubernetes driver's tests: it records every request
//! and answers as an API server would, for any resource path (`/api/v1/...`,
//! `/apis/<group>/<version>/...`, namespaced or cluster-scoped; Cluster API's `v1beta1` and
//! `v1beta2` alike, each version's objects kept apart, without conversion):
//! * `PATCH` with `application/apply-patch+yaml` (server-side apply) creates the object (201)
//!   or merges into it (200) and returns it; it requires `fieldManager` and the URL's name;
//! * `PATCH` with `application/merge-patch+json` merges into an existing object (404 if none);
//! * `GET` returns a stored object (404 Status if none) or a list, filtered by
//!   `labelSelector` (`k=v,k2=v2`);
//! * `DELETE` of an absent object is a 404 Status; an object with finalizers only gets a
//!   `deletionTimestamp` (as Cluster API's finalizers keep a Cluster until it is torn down);
//! * `metadata.generation` counts spec changes, so tests can make status stale or current;
//! * a token controller fills `token` and `ca.crt` of `kubernetes.io/service-account-token`
//!   Secrets;
//! * faults can be injected: the next matching request gets a given status code;
//! * as a workload cluster: `POST` creates an object (201, 409 `AlreadyExists`); a list of a
//!   namespaced kind at its cluster-wide path (`/api/v1/pods`) spans every namespace and
//!   honours `fieldSelector` (`spec.nodeName=n`); the Eviction subresource
//!   (`POST …/pods/{name}/eviction`, policy/v1) deletes the Pod (201 Success) or, while a
//!   PodDisruptionBudget is simulated ([`FakeKube::block_evictions`]), answers 429
//!   `TooManyRequests` as the API server does; a Pod created with `spec.nodeName` and
//!   `hostPID` running `systemctl reboot` reboots its Node (the kubelet comes back with a new
//!   `status.nodeInfo.bootID` and `Ready`), unless the node is to stay down
//!   ([`FakeKube::nodes_stay_down`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use actix_web::dev::ServerHandle;
use actix_web::{web, HttpRequest, HttpResponse};
use base64::Engine;
use serde_json::{json, Map, Value};

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: String,
    pub content_type: String,
    pub body: Option<Value>,
    pub status: u16,
}

#[derive(Debug, Clone)]
struct Fault {
    method: String,
    path_contains: String,
    code: u16,
    reason: String,
    message: String,
}

#[derive(Default)]
struct State {
    /// Collection path -> name -> object.
    objects: BTreeMap<String, BTreeMap<String, Value>>,
    requests: Vec<Recorded>,
    faults: Vec<Fault>,
    resource_version: u64,
    /// Evictions refused (429) before they are allowed again.
    blocked_evictions: usize,
    /// Rebooted nodes stay down (NotReady, the old boot ID).
    stay_down: bool,
    /// Reboots simulated so far.
    reboots: usize,
}

pub struct FakeKube {
    pub url: String,
    state: Arc<Mutex<State>>,
    handle: ServerHandle,
}

/// Where a request path points: the collection, and the object's name if any.
#[derive(Debug, Clone)]
struct Target {
    collection: String,
    api_version: String,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

fn parse_path(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (prefix_len, api_version) = match segs.first() {
        Some(&"api") if segs.len() >= 2 => (2, segs[1].to_string()),
        Some(&"apis") if segs.len() >= 3 => (3, format!("{}/{}", segs[1], segs[2])),
        _ => return None,
    };
    let prefix = format!("/{}", segs[..prefix_len].join("/"));
    let rest = &segs[prefix_len..];
    if rest.is_empty() {
        return None;
    }
    if rest[0] == "namespaces" && rest.len() >= 3 {
        return Some(Target {
            collection: format!("{prefix}/namespaces/{}/{}", rest[1], rest[2]),
            api_version,
            namespace: Some(rest[1].to_string()),
            name: rest.get(3).map(|s| s.to_string()),
            subresource: rest.get(4).map(|s| s.to_string()),
        });
    }
    Some(Target {
        collection: format!("{prefix}/{}", rest[0]),
        api_version,
        namespace: None,
        name: rest.get(1).map(|s| s.to_string()),
        subresource: rest.get(2).map(|s| s.to_string()),
    })
}

fn status_body(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": if code < 400 { "Success" } else { "Failure" },
        "message": message, "reason": reason, "code": code,
    })
}

/// Server-side-apply-like merge: objects merge key by key, everything else is replaced.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                match t.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => merge(existing, v),
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

/// RFC 7386 JSON merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

fn selector_matches(obj: &Value, selector: &str) -> bool {
    selector
        .split(',')
        .filter(|s| !s.is_empty())
        .all(|term| match term.split_once('=') {
            Some((k, v)) => obj["metadata"]["labels"][k].as_str() == Some(v),
            None => obj["metadata"]["labels"].get(term).is_some(),
        })
}

/// `fieldSelector` terms `a.b=v` (dotted paths into the object).
fn fields_match(obj: &Value, selector: &str) -> bool {
    selector
        .split(',')
        .filter(|s| !s.is_empty())
        .all(|term| match term.split_once('=') {
            Some((path, v)) => {
                let found = path.split('.').fold(obj, |o, k| &o[k]);
                found.as_str() == Some(v)
            }
            None => false,
        })
}

fn query_param(query: &str, key: &str) -> Option<String> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .ok()?
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

impl State {
    fn next_rv(&mut self) -> String {
        self.resource_version += 1;
        self.resource_version.to_string()
    }

    /// What the token controller does to a new service-account token Secret.
    fn run_controllers(obj: &mut Value) {
        if obj["kind"] == "Secret" && obj["type"] == "kubernetes.io/service-account-token" {
            let sa = obj["metadata"]["annotations"]["kubernetes.io/service-account.name"]
                .as_str()
                .unwrap_or("unknown")
                .to_string();
            obj["data"]["token"] = json!(b64(&format!("token-for-{sa}")));
            obj["data"]["ca.crt"] = json!(b64("token-controller-ca"));
        }
    }

    fn handle(
        &mut self,
        method: &str,
        path: &str,
        query: &str,
        content_type: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        if let Some(i) = self
            .faults
            .iter()
            .position(|f| f.method == method && path.contains(&f.path_contains))
        {
            let f = self.faults.remove(i);
            return (f.code, status_body(f.code, &f.reason, &f.message));
        }
        let Some(target) = parse_path(path) else {
            return (
                404,
                status_body(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                ),
            );
        };
        let not_found = |t: &Target| {
            let name = t.name.clone().unwrap_or_default();
            (
                404,
                status_body(404, "NotFound", &format!("\"{name}\" not found")),
            )
        };
        match (method, &target.name) {
            ("GET", Some(name)) => match self
                .objects
                .get(&target.collection)
                .and_then(|c| c.get(name))
            {
                Some(obj) => (200, obj.clone()),
                None => not_found(&target),
            },
            ("GET", None) => {
                let selector = query_param(query, "labelSelector").unwrap_or_default();
                let fields = query_param(query, "fieldSelector").unwrap_or_default();
                // `/api/v1/pods` lists the pods of every namespace.
                let (prefix, kind) = target.collection.rsplit_once('/').unwrap_or_default();
                let everywhere = target.namespace.is_none();
                let items: Vec<Value> = self
                    .objects
                    .iter()
                    .filter(|(c, _)| {
                        **c == target.collection
                            || (everywhere
                                && c.starts_with(&format!("{prefix}/namespaces/"))
                                && c.ends_with(&format!("/{kind}"))
                                && c.matches('/').count() == prefix.matches('/').count() + 3)
                    })
                    .flat_map(|(_, c)| c.values())
                    .filter(|o| selector_matches(o, &selector) && fields_match(o, &fields))
                    .cloned()
                    .collect();
                let rv = self.next_rv();
                (
                    200,
                    json!({"apiVersion": target.api_version, "kind": "List", "metadata": {"resourceVersion": rv}, "items": items}),
                )
            }
            ("POST", None) => {
                let Some(body) = body.filter(|b| b["metadata"]["name"].is_string()) else {
                    return (
                        422,
                        status_body(422, "Invalid", "metadata.name: Required value"),
                    );
                };
                let name = body["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let rv = self.next_rv();
                let collection = self.objects.entry(target.collection.clone()).or_default();
                if collection.contains_key(&name) {
                    return (
                        409,
                        status_body(409, "AlreadyExists", &format!("\"{name}\" already exists")),
                    );
                }
                let mut obj = body.clone();
                obj["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
                obj["metadata"]["resourceVersion"] = json!(rv);
                obj["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
                if let Some(ns) = &target.namespace {
                    obj["metadata"]["namespace"] = json!(ns);
                }
                if obj["kind"] == "Pod" {
                    obj["status"] = json!({"phase": "Pending"});
                }
                collection.insert(name, obj.clone());
                if obj["kind"] == "Pod" {
                    self.kubelet_runs(&target.collection, &obj);
                }
                let created = self.objects[&target.collection]
                    [obj["metadata"]["name"].as_str().unwrap_or_default()]
                .clone();
                (201, created)
            }
            ("POST", Some(name)) if target.subresource.as_deref() == Some("eviction") => {
                let exists = self
                    .objects
                    .get(&target.collection)
                    .is_some_and(|c| c.contains_key(name));
                if !exists {
                    return not_found(&target);
                }
                if body.map(|b| (&b["apiVersion"], &b["kind"]))
                    != Some((&json!("policy/v1"), &json!("Eviction")))
                {
                    return (
                        400,
                        status_body(400, "BadRequest", "the body must be a policy/v1 Eviction"),
                    );
                }
                if self.blocked_evictions > 0 {
                    self.blocked_evictions -= 1;
                    let mut answer = status_body(
                        429,
                        "TooManyRequests",
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                    );
                    answer["details"] = json!({"causes": [{"reason": "DisruptionBudget", "message": "The disruption budget web-pdb needs 1 healthy pods and has 1 currently"}]});
                    return (429, answer);
                }
                if let Some(c) = self.objects.get_mut(&target.collection) {
                    c.remove(name);
                }
                (201, status_body(201, "", ""))
            }
            ("PATCH", Some(name)) if content_type.starts_with("application/apply-patch") => {
                let Some(body) = body else {
                    return (
                        400,
                        status_body(400, "BadRequest", "an apply patch needs a body"),
                    );
                };
                if query_param(query, "fieldManager").is_none() {
                    return (
                        400,
                        status_body(
                            400,
                            "BadRequest",
                            "fieldManager is required for apply requests",
                        ),
                    );
                }
                if body["metadata"]["name"].as_str() != Some(name.as_str())
                    || !body["apiVersion"].is_string()
                    || !body["kind"].is_string()
                {
                    return (
                        400,
                        status_body(
                            400,
                            "BadRequest",
                            "the body's apiVersion, kind and metadata.name must match the request",
                        ),
                    );
                }
                let rv = self.next_rv();
                let collection = self.objects.entry(target.collection.clone()).or_default();
                match collection.get_mut(name) {
                    Some(existing) => {
                        let before = existing["spec"].clone();
                        merge(existing, body);
                        if existing["spec"] != before {
                            let generation =
                                existing["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
                            existing["metadata"]["generation"] = json!(generation);
                        }
                        existing["metadata"]["resourceVersion"] = json!(rv);
                        (200, existing.clone())
                    }
                    None => {
                        let mut obj = body.clone();
                        obj["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
                        obj["metadata"]["resourceVersion"] = json!(rv);
                        obj["metadata"]["generation"] = json!(1);
                        obj["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
                        if let Some(ns) = &target.namespace {
                            obj["metadata"]["namespace"] = json!(ns);
                        }
                        Self::run_controllers(&mut obj);
                        collection.insert(name.clone(), obj.clone());
                        (201, obj)
                    }
                }
            }
            ("PATCH", Some(name)) if content_type.starts_with("application/merge-patch+json") => {
                let rv = self.next_rv();
                match self
                    .objects
                    .get_mut(&target.collection)
                    .and_then(|c| c.get_mut(name))
                {
                    Some(existing) => {
                        let before = existing["spec"].clone();
                        merge_patch(existing, body.unwrap_or(&Value::Null));
                        if existing["spec"] != before {
                            let generation =
                                existing["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
                            existing["metadata"]["generation"] = json!(generation);
                        }
                        existing["metadata"]["resourceVersion"] = json!(rv);
                        (200, existing.clone())
                    }
                    None => not_found(&target),
                }
            }
            ("PATCH", _) => (
                415,
                status_body(
                    415,
                    "UnsupportedMediaType",
                    &format!("unsupported patch type {content_type}"),
                ),
            ),
            ("DELETE", Some(name)) => {
                let Some(collection) = self.objects.get_mut(&target.collection) else {
                    return not_found(&target);
                };
                let Some(existing) = collection.get_mut(name) else {
                    return not_found(&target);
                };
                let finalizers = existing["metadata"]["finalizers"]
                    .as_array()
                    .is_some_and(|f| !f.is_empty());
                if finalizers {
                    existing["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:10:00Z");
                    return (200, existing.clone());
                }
                collection.remove(name);
                (200, status_body(200, "", ""))
            }
            _ => (
                405,
                status_body(405, "MethodNotAllowed", "not supported by the fake"),
            ),
        }
    }
}

impl State {
    /// The kubelet of a created Pod's node: a reboot Pod (host PID namespace, `systemctl
    /// reboot`) reboots the node, which comes back with a new boot ID and Ready (unless nodes
    /// stay down); the Pod is left `Failed`, as a kubelet that restarted under it reports.
    fn kubelet_runs(&mut self, collection: &str, pod: &Value) {
        let Some(node) = pod["spec"]["nodeName"].as_str().map(str::to_string) else {
            return;
        };
        let reboots = pod["spec"]["hostPID"] == true
            && pod["spec"]["containers"][0]["command"]
                .as_array()
                .is_some_and(|c| c.iter().any(|a| a == "reboot"));
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let phase = if reboots { "Failed" } else { "Running" };
        if let Some(p) = self
            .objects
            .get_mut(collection)
            .and_then(|c| c.get_mut(&name))
        {
            p["status"] = json!({"phase": phase});
        }
        if !reboots {
            return;
        }
        self.reboots += 1;
        let generation = self.reboots;
        let stay_down = self.stay_down;
        let Some(n) = self
            .objects
            .get_mut("/api/v1/nodes")
            .and_then(|c| c.get_mut(&node))
        else {
            return;
        };
        let ready = if stay_down { "Unknown" } else { "True" };
        if !stay_down {
            n["status"]["nodeInfo"]["bootID"] = json!(format!("boot-{node}-{generation}"));
        }
        n["status"]["conditions"] = json!([{"type": "Ready", "status": ready,
            "reason": if stay_down { "NodeStatusUnknown" } else { "KubeletReady" }}]);
    }
}

async fn dispatch(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<Arc<Mutex<State>>>,
) -> HttpResponse {
    let method = req.method().as_str().to_string();
    let path = req.path().to_string();
    let query = req.query_string().to_string();
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let parsed: Option<Value> = if body.is_empty() {
        None
    } else {
        Some(
            serde_json::from_slice(&body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned())),
        )
    };
    let (code, answer) = {
        let mut state = state.lock().expect("state lock");
        let (code, answer) = state.handle(&method, &path, &query, &content_type, parsed.as_ref());
        state.requests.push(Recorded {
            method,
            path,
            query,
            content_type,
            body: parsed,
            status: code,
        });
        (code, answer)
    };
    HttpResponse::build(actix_web::http::StatusCode::from_u16(code).expect("status code"))
        .content_type("application/json")
        .body(answer.to_string())
}

impl FakeKube {
    pub async fn start() -> FakeKube {
        let state = Arc::new(Mutex::new(State::default()));
        let (port, handle) = crate::helpers::stub_server(web::Data::new(state.clone()), dispatch);
        FakeKube {
            url: format!("http://127.0.0.1:{port}"),
            state,
            handle,
        }
    }

    /// Stops answering: the port is closed, so clients see the server as unreachable.
    pub async fn stop(&self) {
        self.handle.stop(false).await;
    }

    /// A kubeconfig for this server (token authentication, the given CA data if any).
    pub fn kubeconfig(&self, ca_data: Option<&str>) -> String {
        let ca = ca_data
            .map(|c| format!("\n    certificate-authority-data: {c}"))
            .unwrap_or_default();
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}{ca}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\ncurrent-context: fake\nusers:\n- name: fake\n  user:\n    token: fake-token\n",
            self.url
        )
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().expect("state lock").requests.clone()
    }

    /// Requests other than reads.
    pub fn writes(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method != "GET")
            .collect()
    }

    pub fn clear_requests(&self) {
        self.state.lock().expect("state lock").requests.clear();
    }

    pub fn get(&self, path: &str) -> Option<Value> {
        let target = parse_path(path)?;
        let state = self.state.lock().expect("state lock");
        state
            .objects
            .get(&target.collection)?
            .get(target.name.as_deref()?)
            .cloned()
    }

    /// Stores an object at a path (as a controller or an operator would create it).
    pub fn put(&self, path: &str, mut obj: Value) {
        let target = parse_path(path).expect("an object path");
        let name = target.name.clone().expect("an object name");
        if obj["metadata"]["name"].is_null() {
            obj["metadata"]["name"] = json!(name);
        }
        if let Some(ns) = &target.namespace {
            obj["metadata"]["namespace"] = json!(ns);
        }
        let mut state = self.state.lock().expect("state lock");
        state
            .objects
            .entry(target.collection)
            .or_default()
            .insert(name, obj);
    }

    /// Merges into a stored object (status injection, as a controller writes it).
    pub fn update(&self, path: &str, patch: Value) {
        let target = parse_path(path).expect("an object path");
        let mut state = self.state.lock().expect("state lock");
        let obj = state
            .objects
            .get_mut(&target.collection)
            .and_then(|c| c.get_mut(target.name.as_deref().unwrap_or_default()))
            .unwrap_or_else(|| panic!("no object at {path}"));
        merge_patch(obj, &patch);
    }

    /// Removes an object, as a controller does once its finalizers are done.
    pub fn remove(&self, path: &str) {
        let target = parse_path(path).expect("an object path");
        let mut state = self.state.lock().expect("state lock");
        if let Some(c) = state.objects.get_mut(&target.collection) {
            c.remove(target.name.as_deref().unwrap_or_default());
        }
    }

    /// Every stored object, as (path, object).
    pub fn objects(&self) -> Vec<(String, Value)> {
        let state = self.state.lock().expect("state lock");
        state
            .objects
            .iter()
            .flat_map(|(c, items)| {
                items
                    .iter()
                    .map(move |(n, o)| (format!("{c}/{n}"), o.clone()))
            })
            .collect()
    }

    /// The next `n` evictions are refused with 429, as a PodDisruptionBudget does.
    pub fn block_evictions(&self, n: usize) {
        self.state.lock().expect("state lock").blocked_evictions = n;
    }

    /// Nodes rebooted from now on never come back.
    pub fn nodes_stay_down(&self) {
        self.state.lock().expect("state lock").stay_down = true;
    }

    /// Nodes rebooted so far.
    pub fn reboots(&self) -> usize {
        self.state.lock().expect("state lock").reboots
    }

    /// The next request with this method whose path contains `path_contains` gets `code`.
    pub fn fail_next(
        &self,
        method: &str,
        path_contains: &str,
        code: u16,
        reason: &str,
        message: &str,
    ) {
        self.state.lock().expect("state lock").faults.push(Fault {
            method: method.into(),
            path_contains: path_contains.into(),
            code,
            reason: reason.into(),
            message: message.into(),
        });
    }
}
