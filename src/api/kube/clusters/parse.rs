//! A request body read into what the registry stores (wire to domain): the whole object
//! checked by [`validation`], then its name, metadata and spec.

use base64::Engine;
use serde_json::Value;

use crate::api::kube::objects;
use crate::api::kube::request::Params;
use crate::api::kube::status::{Cause, KubeError, CLUSTERS};
use crate::api::kube::validation;
use crate::domain::registry::{
    AuthPointers, ObjectRef, RegistryMeta, ServerEndpoint, NAME_ANNOTATION,
};

/// What a body asks for, parsed and checked: the registry's part of the row and the name.
pub(super) struct Desired {
    pub(super) name: String,
    pub(super) meta: RegistryMeta,
    pub(super) resource_version: Option<i64>,
    pub(super) uid: Option<String>,
    pub(super) warnings: Vec<String>,
}

/// Checks a whole object (create, replace, or the result of a patch or an apply) through
/// [`validation::check_cluster`] and reads what the registry stores from it. `raw` is the
/// request body when its keys are the object's (see [`validation::raw_object`]).
pub(super) fn desired(
    body: &Value,
    raw: Option<&[u8]>,
    p: &Params,
    url_name: Option<&str>,
) -> Result<Desired, KubeError> {
    let mode = validation::FieldValidation::parse(p.field_validation.as_deref())?;
    let (obj, warnings) = validation::check_cluster(body, raw, mode)?;
    let meta = obj.metadata;
    let stated_name = meta.name.unwrap_or_default();
    let generate_name = meta.generate_name.filter(|g| !g.is_empty());
    let name = match (url_name, &generate_name) {
        (Some(url), _) => {
            if !stated_name.is_empty() {
                validation::check_name(body, url)?;
            }
            url.to_string()
        }
        (None, Some(prefix)) if stated_name.is_empty() => validation::generate_name(prefix),
        (None, _) => stated_name,
    };
    if name.is_empty() {
        return Err(KubeError::invalid(
            &CLUSTERS,
            "",
            vec![Cause::required(
                "metadata.name",
                "name or generateName is required",
            )],
        ));
    }
    let resource_version = match meta.resource_version.as_deref().unwrap_or("") {
        "" => None,
        rv => Some(
            rv.parse::<i64>()
                .map_err(|_| KubeError::BadRequest(format!("invalid resourceVersion {rv:?}")))?,
        ),
    };
    let spec = obj.spec;
    let endpoints = spec.kubernetes_api_endpoints.unwrap_or_default();
    let ca_bundle = match endpoints.ca_bundle.as_deref() {
        None | Some("") => None,
        Some(b64) => Some(
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|_| {
                        KubeError::invalid(
                            &CLUSTERS,
                            &name,
                            vec![Cause::invalid_unquoted(
                                "spec.kubernetesApiEndpoints.caBundle",
                                "not base64",
                            )],
                        )
                    })?,
            )
            .map_err(|_| {
                KubeError::invalid(
                    &CLUSTERS,
                    &name,
                    vec![Cause::invalid_unquoted(
                        "spec.kubernetesApiEndpoints.caBundle",
                        "not PEM text",
                    )],
                )
            })?,
        ),
    };
    let pointer = |r: Option<objects::ObjectReference>| {
        r.map(|r| ObjectRef {
            kind: r.kind,
            name: r.name,
            namespace: r.namespace,
        })
    };
    let auth = spec.auth_info.unwrap_or_default();
    let mut annotations = meta.annotations.unwrap_or_default();
    // The derived-name annotation is the service's; a client's copy of it is not stored.
    annotations.remove(NAME_ANNOTATION);
    Ok(Desired {
        name,
        meta: RegistryMeta {
            labels: meta.labels.unwrap_or_default(),
            annotations,
            resource_version: 0,
            generation: 1,
            server_endpoints: endpoints
                .server_endpoints
                .into_iter()
                .map(|s| ServerEndpoint {
                    client_cidr: s.client_cidr,
                    server_address: s.server_address,
                })
                .collect(),
            ca_bundle,
            auth_info: AuthPointers {
                user: pointer(auth.user),
                controller: pointer(auth.controller),
            },
            finalizers: meta.finalizers.unwrap_or_default(),
            owner_references: meta
                .owner_references
                .into_iter()
                .flatten()
                .map(Into::into)
                .collect(),
            generate_name,
            ..RegistryMeta::default()
        },
        resource_version,
        uid: meta.uid.filter(|u| !u.is_empty()),
        warnings,
    })
}

/// The `metadata.resourceVersion` or `metadata.uid` an applied object states, if any.
pub(super) fn stated<'a>(applied: &'a Value, field: &str) -> Option<&'a str> {
    applied["metadata"][field]
        .as_str()
        .filter(|s| !s.is_empty())
}

/// Drops what the server owns from a body (uid, resourceVersion and the like are checked
/// separately on updates) and refuses a namespace other than the URL's.
pub(super) fn strip_server_fields(value: &mut Value, namespace: &str) -> Result<(), KubeError> {
    validation::check_namespace(value, namespace)?;
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in validation::SERVER_FIELDS {
            meta.remove(*k);
        }
    }
    if let Some(obj) = value.as_object_mut() {
        obj.remove("status");
    }
    Ok(())
}
