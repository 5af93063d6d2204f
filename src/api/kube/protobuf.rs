//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`), as
//! kubectl's typed clients send the self reviews: the four bytes `k8s\0`, then a
//! `runtime.Unknown` envelope (`typeMeta`, `raw`) whose `raw` is the object's message. Only
//! the fields the reviews read are declared; prost skips the others. Answers are JSON, which
//! client-go reads whatever it sent.

use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SelfSubjectAccessReview,
    SelfSubjectAccessReviewSpec, SelfSubjectRulesReview, SelfSubjectRulesReviewSpec,
};
use prost::Message;

/// The media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// What every protobuf-encoded object starts with.
const MAGIC: &[u8] = b"k8s\0";

#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    raw: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct ResourceAttributesPb {
    #[prost(string, optional, tag = "1")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "2")]
    verb: Option<String>,
    #[prost(string, optional, tag = "3")]
    group: Option<String>,
    #[prost(string, optional, tag = "4")]
    version: Option<String>,
    #[prost(string, optional, tag = "5")]
    resource: Option<String>,
    #[prost(string, optional, tag = "6")]
    subresource: Option<String>,
    #[prost(string, optional, tag = "7")]
    name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct NonResourceAttributesPb {
    #[prost(string, optional, tag = "1")]
    path: Option<String>,
    #[prost(string, optional, tag = "2")]
    verb: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct AccessSpecPb {
    #[prost(message, optional, tag = "1")]
    resource_attributes: Option<ResourceAttributesPb>,
    #[prost(message, optional, tag = "2")]
    non_resource_attributes: Option<NonResourceAttributesPb>,
}

#[derive(Clone, PartialEq, Message)]
struct AccessReviewPb {
    #[prost(message, optional, tag = "2")]
    spec: Option<AccessSpecPb>,
}

#[derive(Clone, PartialEq, Message)]
struct RulesSpecPb {
    #[prost(string, optional, tag = "1")]
    namespace: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct RulesReviewPb {
    #[prost(message, optional, tag = "2")]
    spec: Option<RulesSpecPb>,
}

/// Whether a request's `Content-Type` is the protobuf encoding.
pub fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(MEDIA_TYPE))
}

/// The `raw` message of an encoded object of `kind` (the envelope checked).
fn raw(body: &[u8], kind: &str) -> Result<Vec<u8>, String> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or("the body does not start with the protobuf magic number")?;
    let unknown = Unknown::decode(rest).map_err(|e| e.to_string())?;
    let found = unknown.type_meta.and_then(|t| t.kind).unwrap_or_default();
    if !found.is_empty() && found != kind {
        return Err(format!("the body holds a {found}, not a {kind}"));
    }
    Ok(unknown.raw.unwrap_or_default())
}

/// A `SelfSubjectAccessReview` from its protobuf encoding.
pub fn access_review(body: &[u8]) -> Result<SelfSubjectAccessReview, String> {
    let pb = AccessReviewPb::decode(raw(body, "SelfSubjectAccessReview")?.as_slice())
        .map_err(|e| e.to_string())?;
    let spec = pb.spec.unwrap_or_default();
    Ok(SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: spec.resource_attributes.map(|r| ResourceAttributes {
                namespace: r.namespace,
                verb: r.verb,
                group: r.group,
                version: r.version,
                resource: r.resource,
                subresource: r.subresource,
                name: r.name,
                ..Default::default()
            }),
            non_resource_attributes: spec.non_resource_attributes.map(|n| NonResourceAttributes {
                path: n.path,
                verb: n.verb,
            }),
        },
        ..Default::default()
    })
}

/// A `SelfSubjectRulesReview` from its protobuf encoding.
pub fn rules_review(body: &[u8]) -> Result<SelfSubjectRulesReview, String> {
    let pb = RulesReviewPb::decode(raw(body, "SelfSubjectRulesReview")?.as_slice())
        .map_err(|e| e.to_string())?;
    Ok(SelfSubjectRulesReview {
        spec: SelfSubjectRulesReviewSpec {
            namespace: pb.spec.and_then(|s| s.namespace),
        },
        ..Default::default()
    })
}

/// Checks a `SelfSubjectReview`'s protobuf encoding (it asks nothing).
pub fn subject_review(body: &[u8]) -> Result<(), String> {
    raw(body, "SelfSubjectReview").map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("authorization.k8s.io/v1".into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw),
        };
        [MAGIC.to_vec(), unknown.encode_to_vec()].concat()
    }

    #[test]
    fn an_access_review_decodes_from_kubectls_encoding() {
        let pb = AccessReviewPb {
            spec: Some(AccessSpecPb {
                resource_attributes: Some(ResourceAttributesPb {
                    namespace: Some("p1".into()),
                    verb: Some("create".into()),
                    group: Some("clusterregistry.k8s.io".into()),
                    resource: Some("clusters".into()),
                    ..Default::default()
                }),
                non_resource_attributes: None,
            }),
        };
        let review =
            access_review(&encode("SelfSubjectAccessReview", pb.encode_to_vec())).expect("decodes");
        let r = review.spec.resource_attributes.expect("attributes");
        assert_eq!(r.namespace.as_deref(), Some("p1"));
        assert_eq!(r.verb.as_deref(), Some("create"));
        assert_eq!(r.resource.as_deref(), Some("clusters"));
        assert!(review.spec.non_resource_attributes.is_none());
    }

    #[test]
    fn a_rules_review_decodes_and_a_wrong_envelope_does_not() {
        let pb = RulesReviewPb {
            spec: Some(RulesSpecPb {
                namespace: Some("p1".into()),
            }),
        };
        let review =
            rules_review(&encode("SelfSubjectRulesReview", pb.encode_to_vec())).expect("decodes");
        assert_eq!(review.spec.namespace.as_deref(), Some("p1"));
        assert!(rules_review(&pb.encode_to_vec()).is_err());
        assert!(access_review(&encode("SelfSubjectRulesReview", vec![])).is_err());
        assert!(subject_review(b"k8s\0\xff\xff").is_err());
        assert!(is_protobuf(
            "application/vnd.kubernetes.protobuf; charset=utf-8"
        ));
        assert!(!is_protobuf("application/json"));
    }
}
