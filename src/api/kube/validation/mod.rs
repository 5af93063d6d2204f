//! Validation of a `Cluster` body as kubectl sent it (raw JSON), with kube-apiserver's field
//! validation modes and messages, plus the registry's own rules: no credentials, ever (only
//! pointers to them), CIDRs that parse, addresses that are addresses, CA bundles that are PEM
//! certificates.

mod credentials;
mod duplicates;
mod metadata;
mod spec;

pub use credentials::{credential_causes, MAX_DEPTH};
pub use duplicates::duplicate_fields;
use metadata::echo;
pub use metadata::{
    cluster_name_cause, finalizer_warnings, metadata_causes, TOTAL_ANNOTATION_SIZE_LIMIT,
};
pub use spec::{ca_bundle_problem, spec_causes, MAX_CA_BUNDLE};

use serde_json::Value;

use super::objects::Cluster;
use super::schema;
use super::status::{quote, KubeError, Resource, CLUSTERS};

/// `?fieldValidation=`: what to do with unknown fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    /// Absent or empty: `Warn`, the apiserver's default (kubectl always sends it).
    pub fn parse(v: Option<&str>) -> Result<Self, KubeError> {
        match v.map(str::trim) {
            None | Some("") => Ok(FieldValidation::Warn),
            Some(s) if s.eq_ignore_ascii_case("Strict") => Ok(FieldValidation::Strict),
            Some(s) if s.eq_ignore_ascii_case("Warn") => Ok(FieldValidation::Warn),
            Some(s) if s.eq_ignore_ascii_case("Ignore") => Ok(FieldValidation::Ignore),
            Some(s) => Err(KubeError::bad_request(format!(
                "fieldValidation: Unsupported value: {}: supported values: \"Ignore\", \"Strict\", \"Warn\"",
                quote(&s.chars().take(64).collect::<String>())
            ))),
        }
    }
}

/// The `Warning` header value of one warning: `299 - "<text>"`.
pub fn warning_header_value(text: &str) -> String {
    let escaped: String = text
        .chars()
        .take(1024)
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if c.is_control() => vec![' '],
            c => vec![c],
        })
        .collect();
    format!("299 - \"{escaped}\"")
}

/// Paths of the fields of a Cluster body the schema does not know (`spec.bogusField`).
pub fn unknown_fields(body: &Value) -> Vec<String> {
    schema::unknown_fields(&schema::CLUSTER, body)
        .into_iter()
        .filter(|p| p != "metadata.clusterName")
        .collect()
}

/// Duplicate and unknown fields, worded as the apiserver's strict decoder, under a mode.
fn field_problems(
    duplicates: &[String],
    unknown: &[String],
    mode: FieldValidation,
) -> Result<Vec<String>, KubeError> {
    let problems: Vec<String> = duplicates
        .iter()
        .map(|f| format!("duplicate field {}", quote(f)))
        .chain(
            unknown
                .iter()
                .map(|f| format!("unknown field {}", quote(f))),
        )
        .collect();
    if problems.is_empty() {
        return Ok(vec![]);
    }
    match mode {
        FieldValidation::Strict => Err(KubeError::strict_decoding_problems(&CLUSTERS, &problems)),
        FieldValidation::Warn => Ok(problems),
        FieldValidation::Ignore => Ok(vec![]),
    }
}

fn name_of(body: &Value) -> String {
    echo(body["metadata"]["name"].as_str().unwrap_or(""))
}

/// Every check, in order: the body is an object; credentials (so a secret is never echoed
/// back); `metadata.clusterName`; unknown fields under `mode` (Strict: 400); then names,
/// labels, annotations and spec (422 with every cause). Returns the warnings (Warn mode) for
/// the `Warning` header.
pub fn validate_cluster(body: &Value, mode: FieldValidation) -> Result<Vec<String>, KubeError> {
    validate_with_duplicates(body, &[], mode)
}

/// The one check of a written `Cluster` object, which every registry write goes through
/// (create, replace, merge and JSON patch, server-side apply, and the `/status` subresource's
/// writes): [`validate_cluster`] with the keys `raw` holds twice treated like unknown fields
/// (Strict: 400, Warn: warnings); then the decode into the wire type, whose type errors never
/// quote the rejected value; then `apiVersion` and `kind`. `raw` is the request body when its
/// keys are the object's fields (a whole object, a merge patch, an applied configuration);
/// see [`raw_object`]. Returns the object and the warnings for the `Warning` header, the
/// finalizer warnings included.
pub fn check_cluster(
    body: &Value,
    raw: Option<&[u8]>,
    mode: FieldValidation,
) -> Result<(Cluster, Vec<String>), KubeError> {
    let duplicates = match raw {
        Some(raw) if mode != FieldValidation::Ignore => duplicate_fields(raw),
        _ => vec![],
    };
    let mut warnings = validate_with_duplicates(body, &duplicates, mode)?;
    let object = decode_cluster(body)?;
    check_type_meta(body, &CLUSTERS)?;
    warnings.extend(finalizer_warnings(body));
    Ok((object, warnings))
}

/// The `metadata` fields the server owns: a write's copy of them is checked apart (the
/// namespace against the URL's, the resourceVersion and uid as preconditions) or ignored.
pub const SERVER_FIELDS: &[&str] = &[
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// The bytes of a write whose keys are the object's own fields, for [`check_cluster`]'s
/// duplicate keys: a whole object or a merge patch or an applied configuration (in JSON; a YAML
/// body yields none), not a JSON patch, whose keys are its operations'.
pub fn raw_object<'a>(content_type: Option<&str>, body: &'a [u8]) -> Option<&'a [u8]> {
    let media = content_type
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    (media != "application/json-patch+json").then_some(body)
}

fn validate_with_duplicates(
    body: &Value,
    duplicates: &[String],
    mode: FieldValidation,
) -> Result<Vec<String>, KubeError> {
    if !body.is_object() {
        return Err(KubeError::undecodable(
            &CLUSTERS,
            "the body is not a JSON object",
        ));
    }
    let secrets = credential_causes(body)?;
    if !secrets.is_empty() {
        return Err(KubeError::invalid(&CLUSTERS, name_of(body), secrets));
    }
    if let Some(c) = cluster_name_cause(body) {
        return Err(KubeError::invalid(&CLUSTERS, name_of(body), vec![c]));
    }
    let warnings = field_problems(duplicates, &unknown_fields(body), mode)?;
    let mut causes = metadata_causes(body);
    causes.extend(spec_causes(body));
    if !causes.is_empty() {
        return Err(KubeError::invalid(&CLUSTERS, name_of(body), causes));
    }
    Ok(warnings)
}

/// `apiVersion` and `kind`, when present, must be the resource's (400 otherwise, as the
/// apiserver); absent ones are for the caller to fill.
pub fn check_type_meta(body: &Value, resource: &Resource) -> Result<(), KubeError> {
    let expected = resource.api_version();
    if let Some(v) = body["apiVersion"].as_str().filter(|v| !v.is_empty()) {
        if v != expected {
            return Err(KubeError::bad_request(format!(
                "the API version in the data ({}) does not match the expected API version ({expected})",
                echo(v)
            )));
        }
    }
    if let Some(k) = body["kind"].as_str().filter(|k| !k.is_empty()) {
        if k != resource.kind {
            return Err(KubeError::bad_request(format!(
                "the kind in the data ({}) does not match the expected kind ({})",
                echo(k),
                resource.kind
            )));
        }
    }
    Ok(())
}

/// A body's `metadata.namespace`, when set, must be the URL's (400 otherwise).
pub fn check_namespace(body: &Value, url_namespace: &str) -> Result<(), KubeError> {
    match body["metadata"]["namespace"].as_str() {
        Some(ns) if !ns.is_empty() && ns != url_namespace => Err(KubeError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => Ok(()),
    }
}

/// On PUT, the body's `metadata.name` must be the URL's (400 otherwise).
pub fn check_name(body: &Value, url_name: &str) -> Result<(), KubeError> {
    let name = body["metadata"]["name"].as_str().unwrap_or("");
    if name == url_name {
        return Ok(());
    }
    Err(KubeError::bad_request(format!(
        "the name of the object ({}) does not match the name on the URL ({})",
        echo(name),
        echo(url_name)
    )))
}

/// The wire `Cluster` of a validated body; a type error (a number where a string belongs) is
/// a 400 `Cluster in version "v1alpha1" cannot be handled as a Cluster: <why>`.
pub fn decode_cluster(body: &Value) -> Result<Cluster, KubeError> {
    serde_json::from_value(body.clone())
        .map_err(|e| KubeError::undecodable(&CLUSTERS, &without_string_values(&e.to_string())))
}

/// serde's `invalid type: string "<value>", expected ...` without the value (it may be a
/// credential in the wrong place).
fn without_string_values(msg: &str) -> String {
    for lead in ["invalid type: string \"", "invalid value: string \""] {
        if let Some(rest) = msg.strip_prefix(lead) {
            let head = &lead[..lead.len() - 2];
            return match rest.rfind("\", expected") {
                Some(i) => format!("{head}{}", &rest[i + 1..]),
                None => head.to_string(),
            };
        }
    }
    msg.chars().take(512).collect()
}

/// The longest generateName prefix kept (63 - 5 random characters).
const MAX_GENERATED_PREFIX: usize = 58;

/// `metadata.generateName` → a name: the prefix (cut to 58 characters) and five random
/// characters from the apiserver's alphabet.
pub fn generate_name(prefix: &str) -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut out: String = prefix.chars().take(MAX_GENERATED_PREFIX).collect();
    let mut rng = rand::thread_rng();
    for _ in 0..5 {
        let i = rng.gen_range(0..ALPHABET.len());
        out.push(char::from(ALPHABET[i]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::kube_names::{
        dns1123_subdomain_errors, is_cidr, is_server_address, label_value_errors, max_len,
        qualified_name_errors, LABEL_VALUE_MSG, QUALIFIED_NAME_MSG,
    };
    use actix_web::ResponseError;
    use base64::Engine;
    use serde_json::json;

    /// A real self-signed certificate (rcgen, test only).
    fn ca_pem() -> String {
        rcgen::generate_simple_self_signed(vec!["ca.example".into()])
            .map(|c| c.cert.pem())
            .unwrap_or_default()
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn good() -> Value {
        json!({"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "alpha", "labels": {"env": "prod", "example.com/tier": "gold"},
                "annotations": {"note": "x"}},
            "spec": {"kubernetesApiEndpoints": {
                "serverEndpoints": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "https://10.0.0.1:6443"},
                                    {"clientCIDR": "2001:db8::/64", "serverAddress": "[2001:db8::1]:6443"}],
                "caBundle": b64(&ca_pem())},
              "authInfo": {"controller": {"kind": "Secret", "name": "alpha-creds", "namespace": "kube-system"}}}})
    }

    fn message(r: Result<Vec<String>, KubeError>) -> (u16, String) {
        match r {
            Ok(w) => (200, w.join("; ")),
            Err(e) => (e.status_code().as_u16(), e.to_string()),
        }
    }

    #[test]
    fn a_good_cluster_passes_in_every_mode() {
        for mode in [
            FieldValidation::Strict,
            FieldValidation::Warn,
            FieldValidation::Ignore,
        ] {
            assert_eq!(
                message(validate_cluster(&good(), mode)),
                (200, String::new())
            );
        }
    }

    #[test]
    fn field_validation_parses_with_warn_as_the_default() {
        assert_eq!(
            FieldValidation::parse(None).ok(),
            Some(FieldValidation::Warn)
        );
        assert_eq!(
            FieldValidation::parse(Some("Strict")).ok(),
            Some(FieldValidation::Strict)
        );
        assert_eq!(
            FieldValidation::parse(Some("Ignore")).ok(),
            Some(FieldValidation::Ignore)
        );
        assert!(FieldValidation::parse(Some("Loose")).is_err());
    }

    #[test]
    fn unknown_fields_are_400_in_strict_warnings_in_warn_and_dropped_in_ignore() {
        let mut b = good();
        b["spec"]["bogusField"] = json!(1);
        b["metadata"]["foo"] = json!("x");
        assert_eq!(unknown_fields(&b), vec!["metadata.foo", "spec.bogusField"]);
        assert_eq!(
            message(validate_cluster(&b, FieldValidation::Strict)),
            (
                400,
                "Cluster in version \"v1alpha1\" cannot be handled as a Cluster: strict decoding \
                 error: unknown field \"metadata.foo\", unknown field \"spec.bogusField\""
                    .into()
            )
        );
        assert_eq!(
            validate_cluster(&b, FieldValidation::Warn).ok(),
            Some(vec![
                "unknown field \"metadata.foo\"".to_string(),
                "unknown field \"spec.bogusField\"".to_string()
            ])
        );
        assert_eq!(
            validate_cluster(&b, FieldValidation::Ignore).ok(),
            Some(vec![])
        );
        assert_eq!(
            warning_header_value("unknown field \"spec.bogusField\""),
            "299 - \"unknown field \\\"spec.bogusField\\\"\""
        );
    }

    #[test]
    fn cluster_name_is_always_refused() {
        let mut b = good();
        b["metadata"]["clusterName"] = json!("x");
        assert_eq!(
            message(validate_cluster(&b, FieldValidation::Ignore)),
            (
                422,
                "Cluster.clusterregistry.k8s.io \"alpha\" is invalid: metadata.clusterName: \
                 Invalid value: \"x\": clusterName is not used and must not be set"
                    .into()
            )
        );
    }

    #[test]
    fn credentials_are_refused_without_being_echoed() {
        let mut b = good();
        b["spec"]["authInfo"]["user"] = json!({"kind": "Secret", "token": "s3cr3t-value"});
        let (code, msg) = message(validate_cluster(&b, FieldValidation::Strict));
        assert_eq!(code, 422);
        assert_eq!(
            msg,
            "Cluster.clusterregistry.k8s.io \"alpha\" is invalid: spec.authInfo.user.token: \
             Forbidden: the registry stores pointers to credentials (kind, name, namespace), \
             never credentials; put the token in a Secret and reference it"
        );
        assert!(!msg.contains("s3cr3t"));

        for (path, value, field) in [
            ("/spec/bearerToken", json!("t"), "spec.bearerToken"),
            (
                "/spec/authInfo/controller/password",
                json!("p"),
                "spec.authInfo.controller.password",
            ),
            ("/spec/client-key-data", json!("k"), "spec.client-key-data"),
            (
                "/spec/authInfo/controller/data",
                json!({"x": "y"}),
                "spec.authInfo.controller.data",
            ),
            (
                "/metadata/annotations/example.com~1privateKey",
                json!("k"),
                "metadata.annotations[example.com/privateKey]",
            ),
        ] {
            let mut b = good();
            let (parent, key) = path.rsplit_once('/').unwrap_or(("", path));
            let key = key.replace("~1", "/");
            if let Some(obj) = b.pointer_mut(parent).and_then(Value::as_object_mut) {
                obj.insert(key, value);
            }
            let e = validate_cluster(&b, FieldValidation::Ignore).err();
            let causes = match e {
                Some(KubeError::Invalid { causes, .. }) => causes,
                other => panic!("{path}: {other:?}"),
            };
            assert_eq!(causes[0].field, field, "{path}");
            assert_eq!(causes[0].reason, "FieldValueForbidden");
        }
    }

    #[test]
    fn pem_private_keys_are_found_in_any_string_and_in_base64() {
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n";
        let mut b = good();
        b["metadata"]["annotations"]["note"] = json!(key);
        let e = validate_cluster(&b, FieldValidation::Ignore).err();
        assert!(
            matches!(&e, Some(KubeError::Invalid { causes, .. }) if causes[0].field == "metadata.annotations[note]"),
            "{e:?}"
        );
        let mut b = good();
        b["spec"]["kubernetesApiEndpoints"]["caBundle"] = json!(b64(&format!("{}{key}", ca_pem())));
        let e = validate_cluster(&b, FieldValidation::Ignore).err();
        assert!(
            matches!(&e, Some(KubeError::Invalid { causes, .. })
                if causes[0].field == "spec.kubernetesApiEndpoints.caBundle" && causes[0].reason == "FieldValueForbidden"),
            "{e:?}"
        );
        assert!(!e
            .map(|e| e.to_string())
            .unwrap_or_default()
            .contains("MIIB"));
    }

    #[test]
    fn names_follow_rfc_1123_with_the_apiserver_message() {
        let mut b = good();
        b["metadata"]["name"] = json!("Bad_Name");
        assert_eq!(
            message(validate_cluster(&b, FieldValidation::Strict)),
            (
                422,
                "Cluster.clusterregistry.k8s.io \"Bad_Name\" is invalid: metadata.name: Invalid \
                 value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case \
                 alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
                 character (e.g. 'example.com', regex used for validation is \
                 '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                    .into()
            )
        );
        assert_eq!(
            dns1123_subdomain_errors(&"a".repeat(254)),
            vec![max_len(253)]
        );
        assert!(dns1123_subdomain_errors("a.b-c.d9").is_empty());
        for bad in ["-a", "a-", "a..b", "", "A"] {
            assert!(!dns1123_subdomain_errors(bad).is_empty(), "{bad}");
        }
        let mut b = good();
        b["metadata"] = json!({"generateName": "alpha-"});
        assert!(validate_cluster(&b, FieldValidation::Strict).is_ok());
        b["metadata"] = json!({});
        assert_eq!(
            message(validate_cluster(&b, FieldValidation::Strict)).1,
            "Cluster.clusterregistry.k8s.io \"\" is invalid: metadata.name: Required value: name \
             or generateName is required"
        );
        let n = generate_name("alpha-");
        assert_eq!(n.len(), 11);
        assert!(n.starts_with("alpha-"));
        assert!(dns1123_subdomain_errors(&n).is_empty());
        assert_eq!(generate_name(&"x".repeat(100)).len(), 63);
    }

    #[test]
    fn labels_and_annotations_follow_kubernetes_syntax() {
        assert!(qualified_name_errors("example.com/MyName").is_empty());
        assert_eq!(
            qualified_name_errors("/x"),
            vec!["prefix part must be non-empty".to_string()]
        );
        assert_eq!(
            qualified_name_errors("a/b/c"),
            vec![
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and \
                  must start and end with an alphanumeric character (e.g. 'MyName',  or \
                  'my.name',  or '123-abc', regex used for validation is \
                  '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain \
                  prefix and '/' (e.g. 'example.com/MyName')"
                    .to_string()
            ]
        );
        assert_eq!(
            qualified_name_errors(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters".to_string()]
        );
        assert!(label_value_errors("").is_empty());
        assert_eq!(label_value_errors("-x"), vec![LABEL_VALUE_MSG.to_string()]);
        let mut b = good();
        b["metadata"]["labels"] = json!({"bad key": "ok", "env": "bad value"});
        let causes = match validate_cluster(&b, FieldValidation::Strict) {
            Err(KubeError::Invalid { causes, .. }) => causes,
            other => panic!("{other:?}"),
        };
        assert_eq!(causes.len(), 2);
        assert_eq!(
            causes[0].line(),
            format!("metadata.labels: Invalid value: \"bad key\": name part {QUALIFIED_NAME_MSG}")
        );
        assert_eq!(
            causes[1].line(),
            format!("metadata.labels: Invalid value: \"bad value\": {LABEL_VALUE_MSG}")
        );
        let mut b = good();
        b["metadata"]["annotations"] =
            json!({"Example.com/Upper": "ok", "big": "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT)});
        assert_eq!(
            message(validate_cluster(&b, FieldValidation::Strict)).1,
            "Cluster.clusterregistry.k8s.io \"alpha\" is invalid: metadata.annotations: Too long: \
             may not be more than 262144 bytes"
        );
    }

    #[test]
    fn endpoints_must_be_cidrs_and_addresses() {
        for ok in [
            "0.0.0.0/0",
            "10.0.0.0/8",
            "2001:db8::/64",
            "::/0",
            "192.168.1.7/32",
        ] {
            assert!(is_cidr(ok), "{ok}");
        }
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "::/129",
            "x/8",
            "10.0.0.0/-1",
            "10.0.0.0/",
        ] {
            assert!(!is_cidr(bad), "{bad}");
        }
        for ok in [
            "api.example.com",
            "api.example.com:6443",
            "10.0.0.1",
            "10.0.0.1:6443",
            "2001:db8::1",
            "[2001:db8::1]:6443",
            "https://api.example.com",
            "https://10.0.0.1:6443/k8s/clusters/x",
            "API.Example.com",
            "http://127.0.0.1:9511",
        ] {
            assert!(is_server_address(ok), "{ok}");
        }
        for bad in [
            "ftp://api.example.com",
            "api.example.com:0",
            "api.example.com:99999",
            "user@api",
            "https://user:pw@api",
            "api example",
            "",
            "-bad-",
        ] {
            assert!(!is_server_address(bad), "{bad}");
        }
        let mut b = good();
        b["spec"]["kubernetesApiEndpoints"]["serverEndpoints"] =
            json!([{"clientCIDR": "10.0.0.0", "serverAddress": "ftp://x"}]);
        assert_eq!(
            message(validate_cluster(&b, FieldValidation::Strict)).1,
            "Cluster.clusterregistry.k8s.io \"alpha\" is invalid: \
             [spec.kubernetesApiEndpoints.serverEndpoints[0].clientCIDR: Invalid value: \
             \"10.0.0.0\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64), \
             spec.kubernetesApiEndpoints.serverEndpoints[0].serverAddress: Invalid value: \
             \"ftp://x\": must be a hostname, hostname:port, IP, IP:port or an https:// (or \
             http://) URL with one of these]"
        );
    }

    #[test]
    fn an_address_with_user_info_is_refused_without_echo() {
        let mut b = good();
        b["spec"]["kubernetesApiEndpoints"]["serverEndpoints"] =
            json!([{"clientCIDR": "0.0.0.0/0", "serverAddress": "https://admin:hunter2@api:6443"}]);
        let m = message(validate_cluster(&b, FieldValidation::Strict)).1;
        assert!(
            m.contains("serverEndpoints[0].serverAddress: Forbidden: must not carry credentials"),
            "{m}"
        );
        assert!(!m.contains("hunter2"), "{m}");
    }

    #[test]
    fn ca_bundles_must_be_base64_pem_certificates() {
        assert_eq!(ca_bundle_problem(&b64(&ca_pem())), None);
        assert_eq!(
            ca_bundle_problem(&b64(&format!("{}\n{}", ca_pem(), ca_pem()))),
            None
        );
        assert_eq!(ca_bundle_problem("%%%"), Some("it is not valid base64"));
        // The contract's sample: a header only.
        assert_eq!(
            ca_bundle_problem("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="),
            Some("a CERTIFICATE block is not terminated")
        );
        assert_eq!(
            ca_bundle_problem(&b64("hello")),
            Some("it holds something other than CERTIFICATE blocks")
        );
        assert_eq!(
            ca_bundle_problem(&b64(
                "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n"
            )),
            Some("a CERTIFICATE block is not an X.509 certificate")
        );
        let mut b = good();
        b["spec"]["kubernetesApiEndpoints"]["caBundle"] = json!(b64("hello"));
        assert_eq!(
            message(validate_cluster(&b, FieldValidation::Strict)).1,
            "Cluster.clusterregistry.k8s.io \"alpha\" is invalid: \
             spec.kubernetesApiEndpoints.caBundle: Invalid value: must be the base64 encoding of \
             one or more PEM CERTIFICATE blocks and nothing else (it holds something other than \
             CERTIFICATE blocks)"
        );
    }

    #[test]
    fn auth_info_references_are_names() {
        let mut b = good();
        b["spec"]["authInfo"]["controller"] =
            json!({"kind": "Se cret", "name": "Bad_Name", "namespace": "a.b"});
        let causes = match validate_cluster(&b, FieldValidation::Strict) {
            Err(KubeError::Invalid { causes, .. }) => causes,
            other => panic!("{other:?}"),
        };
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "spec.authInfo.controller.kind",
                "spec.authInfo.controller.name",
                "spec.authInfo.controller.namespace"
            ]
        );
    }

    #[test]
    fn type_meta_namespace_and_name_must_match_the_request() {
        assert!(check_type_meta(&good(), &CLUSTERS).is_ok());
        assert!(check_type_meta(&json!({}), &CLUSTERS).is_ok());
        assert_eq!(
            check_type_meta(&json!({"apiVersion": "v1"}), &CLUSTERS)
                .err()
                .map(|e| e.to_string()),
            Some(
                "the API version in the data (v1) does not match the expected API version \
                 (clusterregistry.k8s.io/v1alpha1)"
                    .into()
            )
        );
        assert!(check_type_meta(&json!({"kind": "Pod"}), &CLUSTERS).is_err());
        let b = json!({"metadata": {"name": "a", "namespace": "p1"}});
        assert!(check_namespace(&b, "p1").is_ok());
        assert_eq!(
            check_namespace(&b, "p2")
                .err()
                .map(|e| e.status_code().as_u16()),
            Some(400)
        );
        assert!(check_name(&b, "a").is_ok());
        assert_eq!(
            check_name(&b, "b").err().map(|e| e.to_string()),
            Some("the name of the object (a) does not match the name on the URL (b)".into())
        );
    }

    #[test]
    fn decoding_reports_type_errors_as_400() {
        let c = decode_cluster(&good()).ok().unwrap_or_default();
        assert_eq!(c.metadata.name.as_deref(), Some("alpha"));
        assert_eq!(
            c.spec.auth_info.and_then(|a| a.controller).map(|r| r.name),
            Some("alpha-creds".into())
        );
        let e = decode_cluster(&json!({"metadata": {"generation": "s3cr3t"}})).err();
        let m = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(m.contains("invalid type: string, expected"), "{m}");
        assert!(!m.contains("s3cr3t"), "{m}");
        let mut b = good();
        b["spec"]["authInfo"]["user"] = json!("bearer-abc");
        let m = message(validate_cluster(&b, FieldValidation::Strict)).1;
        assert!(
            m.contains("spec.authInfo.user: Forbidden: must be an object reference"),
            "{m}"
        );
        assert!(!m.contains("bearer-abc"), "{m}");
        let e = decode_cluster(&json!({"metadata": {"labels": {"a": 1}}})).err();
        assert!(e.is_some_and(|e| e.status_code().as_u16() == 400
            && e.to_string()
                .starts_with("Cluster in version \"v1alpha1\" cannot be handled as a Cluster: ")));
    }

    #[test]
    fn duplicate_fields_are_strict_errors_or_warnings() {
        let raw = br#"{"metadata":{"name":"a","name":"b","labels":{"x":"1","x":"2"}},
            "spec":{"kubernetesApiEndpoints":{"serverEndpoints":[{"serverAddress":"h","serverAddress":"i"}]}}}"#;
        assert_eq!(
            duplicate_fields(raw),
            vec![
                "metadata.name",
                "metadata.labels.x",
                "spec.kubernetesApiEndpoints.serverEndpoints[0].serverAddress"
            ]
        );
        let raw = br#"{"metadata":{"name":"a","name":"b"},"spec":{"bogus":1}}"#;
        let body: Value = serde_json::from_slice(raw).unwrap_or_default();
        assert_eq!(
            check_cluster(&body, Some(raw), FieldValidation::Strict)
                .err()
                .map(|e| e.to_string()),
            Some(
                "Cluster in version \"v1alpha1\" cannot be handled as a Cluster: strict decoding \
                 error: duplicate field \"metadata.name\", unknown field \"spec.bogus\""
                    .into()
            )
        );
        let (object, warnings) = check_cluster(&body, Some(raw), FieldValidation::Warn)
            .ok()
            .unwrap_or_default();
        assert_eq!(object.metadata.name.as_deref(), Some("b"));
        assert_eq!(
            warnings,
            vec![
                "duplicate field \"metadata.name\"".to_string(),
                "unknown field \"spec.bogus\"".to_string()
            ]
        );
        assert!(check_cluster(&body, Some(raw), FieldValidation::Ignore).is_ok());
        // A JSON patch's keys are its operations', not the object's.
        assert_eq!(raw_object(Some("application/json-patch+json"), raw), None);
        assert_eq!(
            raw_object(Some("application/merge-patch+json"), raw),
            Some(&raw[..])
        );
        assert_eq!(raw_object(None, raw), Some(&raw[..]));
    }

    #[test]
    fn a_type_error_in_labels_does_not_quote_the_value() {
        let body = json!({"metadata": {"name": "a", "labels": "s3cr3t"}});
        let m = check_cluster(&body, None, FieldValidation::Strict)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            m.starts_with("Cluster in version \"v1alpha1\" cannot be handled as a Cluster: "),
            "{m}"
        );
        assert!(!m.contains("s3cr3t"), "{m}");
    }

    #[test]
    fn deep_or_non_object_bodies_are_400() {
        let mut deep = json!("x");
        for _ in 0..(MAX_DEPTH + 2) {
            deep = json!({"a": deep});
        }
        let b = json!({"metadata": {"name": "a"}, "spec": deep});
        assert_eq!(
            validate_cluster(&b, FieldValidation::Ignore)
                .err()
                .map(|e| e.status_code().as_u16()),
            Some(400)
        );
        assert_eq!(
            validate_cluster(&json!([1]), FieldValidation::Ignore)
                .err()
                .map(|e| e.status_code().as_u16()),
            Some(400)
        );
    }
}
