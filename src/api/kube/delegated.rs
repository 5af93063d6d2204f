//! The delegated authorizer on the Kubernetes face (`[front_proxy] authorization_mode =
//! subject_access_review`): a request a front proxy forwarded is described as kube-apiserver's
//! request-info resolver describes it (API group, version, resource, subresource, namespace,
//! name and verb, or a non-resource path and verb), asked of the kube-apiserver as a
//! `SubjectAccessReview` ([`crate::auth::access_review`]), and then refused (403 with the
//! reviewer's reason), answered 503 (no decision could be had) or served as the forwarded user
//! acting in the namespace the request names ([`FrontProxy::reviewed_identity`]).

use std::collections::BTreeMap;

use actix_web::dev::ServiceRequest;
use actix_web::{web, HttpMessage};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReviewSpec,
};

use super::status::{quote, KubeError};
use crate::api::http::context::Reviewed;
use crate::api::AppState;
use crate::auth::access_review::Decision;
use crate::auth::front_proxy::{Forwarded, FrontProxy, Peer};

/// What a request asks to do, in the words of a review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attributes {
    Resource {
        group: String,
        version: String,
        resource: String,
        subresource: String,
        namespace: String,
        name: String,
        verb: String,
    },
    NonResource {
        path: String,
        verb: String,
    },
}

impl Attributes {
    /// Whether the request is a read at the cluster scope (every namespace, or a
    /// cluster-scoped resource).
    fn everywhere(&self) -> bool {
        matches!(self, Attributes::Resource { namespace, verb, .. }
            if namespace.is_empty() && matches!(verb.as_str(), "get" | "list" | "watch"))
    }

    fn namespace(&self) -> Option<&str> {
        match self {
            Attributes::Resource { namespace, .. } if !namespace.is_empty() => Some(namespace),
            _ => None,
        }
    }
}

fn is_true(value: &str) -> bool {
    matches!(value, "true" | "True" | "TRUE" | "t" | "T" | "1")
}

/// The attributes of `method` on `path` with `query`, as kube-apiserver resolves them (its
/// `RequestInfoFactory` with the `api` and `apis` prefixes).
pub fn attributes(method: &str, path: &str, query: &str) -> Attributes {
    let non_resource = || Attributes::NonResource {
        path: path.to_string(),
        verb: method.to_ascii_lowercase(),
    };
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, mut rest) = match segments.as_slice() {
        ["api", version, rest @ ..] if !rest.is_empty() => ("", *version, rest),
        ["apis", group, version, rest @ ..] if !rest.is_empty() => (*group, *version, rest),
        _ => return non_resource(),
    };
    let mut verb = match method {
        "POST" => "create",
        "GET" | "HEAD" => "get",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        _ => "",
    }
    .to_string();
    if rest.first() == Some(&"watch") {
        verb = "watch".into();
        rest = &rest[1..];
    }
    let mut namespace = "";
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        namespace = rest[1];
        if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
            rest = &rest[2..];
        }
    }
    let part = |i: usize| rest.get(i).copied().unwrap_or("").to_string();
    let (resource, mut name, subresource) = (part(0), part(1), part(2));
    let params: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
    if name.is_empty() && verb == "get" {
        let watching = params.iter().any(|(k, v)| k == "watch" && is_true(v));
        verb = if watching { "watch" } else { "list" }.into();
    }
    if name.is_empty() && matches!(verb.as_str(), "list" | "watch") {
        if let Some(exact) = params
            .iter()
            .filter(|(k, _)| k == "fieldSelector")
            .flat_map(|(_, v)| v.split(','))
            .find_map(|term| {
                let term = term.trim();
                term.strip_prefix("metadata.name==")
                    .or_else(|| term.strip_prefix("metadata.name="))
            })
        {
            name = exact.to_string();
        }
    }
    if name.is_empty() && verb == "delete" {
        verb = "deletecollection".into();
    }
    Attributes::Resource {
        group: group.to_string(),
        version: version.to_string(),
        resource,
        subresource,
        namespace: namespace.to_string(),
        name,
        verb,
    }
}

/// The review of `who` doing `what`.
pub fn spec(who: &Forwarded, what: &Attributes) -> SubjectAccessReviewSpec {
    let mut spec = SubjectAccessReviewSpec {
        user: Some(who.user.clone()),
        uid: who.uid.clone(),
        groups: Some(who.groups.clone()).filter(|g| !g.is_empty()),
        extra: Some(
            who.extra
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<BTreeMap<_, _>>(),
        )
        .filter(|e| !e.is_empty()),
        ..SubjectAccessReviewSpec::default()
    };
    match what {
        Attributes::Resource {
            group,
            version,
            resource,
            subresource,
            namespace,
            name,
            verb,
        } => {
            let some = |s: &String| Some(s.clone()).filter(|s| !s.is_empty());
            spec.resource_attributes = Some(ResourceAttributes {
                group: Some(group.clone()),
                version: some(version),
                resource: some(resource),
                subresource: some(subresource),
                namespace: some(namespace),
                name: some(name),
                verb: some(verb),
                ..ResourceAttributes::default()
            });
        }
        Attributes::NonResource { path, verb } => {
            spec.non_resource_attributes = Some(NonResourceAttributes {
                path: Some(path.clone()),
                verb: Some(verb.clone()),
            });
        }
    }
    spec
}

/// kube-apiserver's 403 of a denied request: `clusters.clusterregistry.k8s.io "x" is
/// forbidden: User "alice" cannot get resource "clusters" in API group
/// "clusterregistry.k8s.io" in the namespace "p": <reason>`.
pub fn forbidden(user: &str, what: &Attributes, reason: &str) -> KubeError {
    let mut message = match what {
        Attributes::NonResource { path, verb } => format!(
            "forbidden: User {} cannot {verb} path {}",
            quote(user),
            quote(path)
        ),
        Attributes::Resource {
            group,
            resource,
            subresource,
            namespace,
            name,
            verb,
            ..
        } => {
            let qualified = if group.is_empty() {
                resource.clone()
            } else {
                format!("{resource}.{group}")
            };
            let subject = if name.is_empty() {
                qualified
            } else {
                format!("{qualified} {}", quote(name))
            };
            let target = if subresource.is_empty() {
                resource.clone()
            } else {
                format!("{resource}/{subresource}")
            };
            let scope = if namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace {}", quote(namespace))
            };
            format!(
                "{subject} is forbidden: User {} cannot {verb} resource {} in API group {} {scope}",
                quote(user),
                quote(&target),
                quote(group)
            )
        }
    };
    if !reason.is_empty() {
        message.push_str(": ");
        message.push_str(reason);
    }
    KubeError::ForbiddenMessage(message)
}

/// For a request a front proxy forwarded while reviews decide: the review, then the context
/// the request acts under ([`Reviewed`]) or its refusal. Anything else passes untouched.
pub async fn authorize(req: &mut ServiceRequest) -> Result<(), KubeError> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return Ok(());
    };
    let Some(front_proxy) = state.front_proxy.as_deref() else {
        return Ok(());
    };
    let Some(reviewer) = front_proxy.reviewer() else {
        return Ok(());
    };
    if !matches!(req.request().conn_data::<Peer>(), Some(Peer::Proxy(_))) {
        return Ok(());
    }
    let Some(who) = forwarded(front_proxy, req)? else {
        return Ok(());
    };
    let what = attributes(req.method().as_str(), req.path(), req.query_string());
    match reviewer.review(spec(&who, &what)).await {
        Ok(Decision::Allowed) => {
            let identity =
                front_proxy.reviewed_identity(&who.user, what.namespace(), what.everywhere());
            let reviewed = Reviewed::of(req.request(), identity).map_err(KubeError::from)?;
            req.extensions_mut().insert(reviewed);
            Ok(())
        }
        Ok(Decision::Denied(reason)) => {
            tracing::info!(user = %who.user, ?what, reason = %reason, "review denied");
            Err(forbidden(&who.user, &what, &reason))
        }
        Err(e) => {
            tracing::warn!(user = %who.user, ?what, error = %e, "review failed");
            Err(KubeError::ServiceUnavailable(
                "The request could not be authorized: the kube-apiserver did not answer its \
                 SubjectAccessReview; try again shortly."
                    .into(),
            ))
        }
    }
}

fn forwarded(
    front_proxy: &FrontProxy,
    req: &ServiceRequest,
) -> Result<Option<Forwarded>, KubeError> {
    let headers = req
        .headers()
        .iter()
        .map(|(name, value)| (name.as_str(), value.to_str().ok()));
    front_proxy
        .forwarded(headers)
        .map_err(|e| KubeError::BadRequest(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(
        group: &str,
        resource: &str,
        subresource: &str,
        namespace: &str,
        name: &str,
        verb: &str,
    ) -> Attributes {
        Attributes::Resource {
            group: group.into(),
            version: if group.is_empty() { "v1" } else { "v1alpha1" }.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            verb: verb.into(),
        }
    }

    #[test]
    fn requests_are_described_as_kube_apiserver_describes_them() {
        const CR: &str = "/apis/clusterregistry.k8s.io/v1alpha1";
        let g = "clusterregistry.k8s.io";
        let cases = [
            (
                "GET",
                format!("{CR}/namespaces/p/clusters"),
                "",
                resource(g, "clusters", "", "p", "", "list"),
            ),
            (
                "GET",
                format!("{CR}/namespaces/p/clusters"),
                "watch=true&resourceVersion=5",
                resource(g, "clusters", "", "p", "", "watch"),
            ),
            (
                "GET",
                format!("{CR}/namespaces/p/clusters"),
                "fieldSelector=metadata.name%3Dx&watch=1",
                resource(g, "clusters", "", "p", "x", "watch"),
            ),
            (
                "GET",
                format!("{CR}/clusters"),
                "limit=500",
                resource(g, "clusters", "", "", "", "list"),
            ),
            (
                "GET",
                format!("{CR}/namespaces/p/clusters/x"),
                "",
                resource(g, "clusters", "", "p", "x", "get"),
            ),
            (
                "GET",
                format!("{CR}/namespaces/p/clusters/x/status"),
                "",
                resource(g, "clusters", "status", "p", "x", "get"),
            ),
            (
                "GET",
                format!("{CR}/namespaces/p/clusters/x/kubeconfig"),
                "",
                resource(g, "clusters", "kubeconfig", "p", "x", "get"),
            ),
            (
                "POST",
                format!("{CR}/namespaces/p/clusters"),
                "",
                resource(g, "clusters", "", "p", "", "create"),
            ),
            (
                "PUT",
                format!("{CR}/namespaces/p/clusters/x"),
                "",
                resource(g, "clusters", "", "p", "x", "update"),
            ),
            (
                "PATCH",
                format!("{CR}/namespaces/p/clusters/x/status"),
                "",
                resource(g, "clusters", "status", "p", "x", "patch"),
            ),
            (
                "DELETE",
                format!("{CR}/namespaces/p/clusters/x"),
                "",
                resource(g, "clusters", "", "p", "x", "delete"),
            ),
            (
                "DELETE",
                format!("{CR}/namespaces/p/clusters"),
                "",
                resource(g, "clusters", "", "p", "", "deletecollection"),
            ),
            (
                "GET",
                format!("{CR}/watch/namespaces/p/clusters"),
                "",
                resource(g, "clusters", "", "p", "", "watch"),
            ),
            (
                "GET",
                "/api/v1/namespaces".into(),
                "",
                resource("", "namespaces", "", "", "", "list"),
            ),
            (
                "GET",
                "/api/v1/namespaces/p".into(),
                "",
                resource("", "namespaces", "", "p", "p", "get"),
            ),
        ];
        for (method, path, query, want) in cases {
            assert_eq!(
                attributes(method, &path, query),
                want,
                "{method} {path}?{query}"
            );
        }
        for path in [
            "/apis",
            "/apis/clusterregistry.k8s.io",
            "/apis/clusterregistry.k8s.io/v1alpha1",
            "/api",
            "/api/v1",
            "/openapi/v3",
            "/version",
        ] {
            assert_eq!(
                attributes("GET", path, ""),
                Attributes::NonResource {
                    path: path.into(),
                    verb: "get".into()
                },
                "{path}"
            );
        }
    }

    #[test]
    fn a_review_carries_the_caller_and_the_attributes() {
        let who = Forwarded {
            user: "alice".into(),
            uid: Some("u-1".into()),
            groups: vec!["developers".into()],
            extra: BTreeMap::from([("scopes".to_string(), vec!["a".to_string()])]),
        };
        let what = attributes(
            "GET",
            "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/p/clusters/x",
            "",
        );
        let v = serde_json::to_value(spec(&who, &what)).unwrap_or_default();
        assert_eq!(
            v,
            serde_json::json!({"user": "alice", "uid": "u-1", "groups": ["developers"],
                "extra": {"scopes": ["a"]},
                "resourceAttributes": {"group": "clusterregistry.k8s.io", "version": "v1alpha1",
                    "resource": "clusters", "namespace": "p", "name": "x", "verb": "get"}})
        );
        let v =
            serde_json::to_value(spec(&who, &attributes("GET", "/apis", ""))).unwrap_or_default();
        assert_eq!(
            v["nonResourceAttributes"],
            serde_json::json!({"path": "/apis", "verb": "get"})
        );
        assert!(v.get("resourceAttributes").is_none());
    }

    #[test]
    fn a_denial_is_worded_as_kube_apiserver_words_it() {
        let what = attributes(
            "GET",
            "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/p/clusters/x",
            "",
        );
        assert_eq!(
            forbidden("alice", &what, "no RBAC policy matched").to_string(),
            "clusters.clusterregistry.k8s.io \"x\" is forbidden: User \"alice\" cannot get \
             resource \"clusters\" in API group \"clusterregistry.k8s.io\" in the namespace \
             \"p\": no RBAC policy matched"
        );
        let what = attributes("GET", "/apis/clusterregistry.k8s.io/v1alpha1/clusters", "");
        assert_eq!(
            forbidden("alice", &what, "").to_string(),
            "clusters.clusterregistry.k8s.io is forbidden: User \"alice\" cannot list resource \
             \"clusters\" in API group \"clusterregistry.k8s.io\" at the cluster scope"
        );
        assert_eq!(
            forbidden("alice", &attributes("GET", "/apis", ""), "").to_string(),
            "forbidden: User \"alice\" cannot get path \"/apis\""
        );
    }
}
