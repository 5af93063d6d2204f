//! Validation of a `Cluster` body as kubectl sent it (raw JSON), with kube-apiserver's field
//! validation modes and messages, plus the registry's own rules: no credentials, ever (only
//! pointers to them), CIDRs that parse, addresses that are addresses, CA bundles that are PEM
//! certificates.

use std::cell::RefCell;

use base64::Engine;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::objects::Cluster;
use super::schema;
use super::status::{quote, Cause, KubeError, Resource, CLUSTERS};

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

/// Unknown fields under a mode: Strict → 400, Warn → the warning texts, Ignore → nothing.
pub fn apply_field_validation(
    unknown: &[String],
    mode: FieldValidation,
) -> Result<Vec<String>, KubeError> {
    field_problems(&[], unknown, mode)
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

/// Seed that walks raw JSON and records the paths of keys seen twice in one object.
struct Dup<'a> {
    path: String,
    out: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Dup<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Dup<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(Dup {
                path: format!("{}[{i}]", self.path),
                out: self.out,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(k) = map.next_key::<String>()? {
            let child = if self.path.is_empty() {
                k.clone()
            } else {
                format!("{}.{k}", self.path)
            };
            if !seen.insert(k) {
                let mut out = self.out.borrow_mut();
                if out.len() < schema::MAX_UNKNOWN_REPORTED && !out.contains(&child) {
                    out.push(child.clone());
                }
            }
            map.next_value_seed(Dup {
                path: child,
                out: self.out,
            })?;
        }
        Ok(())
    }
}

/// Paths of keys that appear twice in one object of a raw JSON body (`metadata.name`), at
/// most 100; empty for a body that is not JSON.
pub fn duplicate_fields(raw: &[u8]) -> Vec<String> {
    let out = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(raw);
    let _ = Dup {
        path: String::new(),
        out: &out,
    }
    .deserialize(&mut de);
    out.into_inner()
}

// ---- credentials ---------------------------------------------------------------------------

/// Deepest nesting scanned; deeper bodies are refused (nothing goes unscanned).
pub const MAX_DEPTH: usize = 64;
/// Most values scanned in one body.
const MAX_NODES: usize = 200_000;
/// The longest string decoded to look for a base64 PEM private key inside.
const MAX_DECODE: usize = 1 << 20;

const POINTERS_ONLY: &str = "the registry stores pointers to credentials (kind, name, \
     namespace), never credentials";

fn credential_noun(key: &str) -> Option<&'static str> {
    let name = key.rsplit('/').next().unwrap_or(key);
    let norm: String = name
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    match norm.as_str() {
        "token" | "bearertoken" | "accesstoken" | "refreshtoken" | "idtoken" | "apitoken" => {
            Some("token")
        }
        "password" | "passwd" => Some("password"),
        "clientkeydata" | "clientkey" | "privatekey" | "privatekeydata" | "tlskey" => {
            Some("private key")
        }
        "secret" | "clientsecret" | "apikey" | "secretkey" => Some("secret"),
        _ => None,
    }
}

fn refuse(path: &str, noun: &str) -> Cause {
    Cause::forbidden(
        path,
        &format!("{POINTERS_ONLY}; put the {noun} in a Secret and reference it"),
    )
}

fn holds_private_key(s: &str) -> bool {
    if s.contains("PRIVATE KEY-----") {
        return true;
    }
    // base64 of "-----BEGIN": a PEM block hidden in base64 (caBundle, annotations).
    if let Some(i) = s.find("LS0tLS1CRUdJTi") {
        let b64: String = s[i..]
            .chars()
            .take(MAX_DECODE)
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '\n' | '\r'))
            .filter(|c| !c.is_whitespace())
            .collect();
        let engine = base64::engine::general_purpose::STANDARD;
        let trimmed = &b64[..b64.len() - b64.len() % 4];
        if let Ok(bytes) = engine.decode(trimmed) {
            return String::from_utf8_lossy(&bytes).contains("PRIVATE KEY-----");
        }
    }
    false
}

fn child_path(parent: &str, key: &str) -> String {
    if parent == "metadata.labels" || parent == "metadata.annotations" {
        format!("{parent}[{key}]")
    } else if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

struct Scan {
    causes: Vec<Cause>,
    nodes: usize,
    too_deep: bool,
}

fn scan(v: &Value, path: &str, depth: usize, s: &mut Scan) {
    if s.causes.len() >= 20 || s.too_deep {
        return;
    }
    s.nodes += 1;
    if depth > MAX_DEPTH || s.nodes > MAX_NODES {
        s.too_deep = true;
        return;
    }
    match v {
        Value::String(text) if holds_private_key(text) => {
            s.causes.push(refuse(path, "private key"));
        }
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Array(_)
            if path == "spec.authInfo"
                || path == "spec.authInfo.user"
                || path == "spec.authInfo.controller" =>
        {
            s.causes.push(Cause::forbidden(
                path,
                &format!(
                    "must be an object reference (kind, name, namespace): {POINTERS_ONLY}; put \
                     the credential in a Secret and reference it"
                ),
            ));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                scan(item, &format!("{path}[{i}]"), depth + 1, s);
            }
        }
        Value::Object(map) => {
            let is_ref = path == "spec.authInfo.user" || path == "spec.authInfo.controller";
            for (k, child) in map {
                let here = child_path(path, k);
                if let Some(noun) = credential_noun(k) {
                    s.causes.push(refuse(&here, noun));
                    continue;
                }
                if is_ref && !matches!(k.as_str(), "kind" | "name" | "namespace") {
                    s.causes.push(Cause::forbidden(
                        &here,
                        &format!(
                            "an authInfo reference may only hold kind, name and namespace: \
                             {POINTERS_ONLY}; put the credential in a Secret and reference it"
                        ),
                    ));
                    continue;
                }
                scan(child, &here, depth + 1, s);
            }
        }
        _ => {}
    }
}

/// Causes for every credential-looking key or value in the body (values never echoed).
pub fn credential_causes(body: &Value) -> Result<Vec<Cause>, KubeError> {
    let mut s = Scan {
        causes: vec![],
        nodes: 0,
        too_deep: false,
    };
    scan(body, "", 0, &mut s);
    if s.too_deep {
        return Err(KubeError::undecodable(
            &CLUSTERS,
            &format!(
                "the object is nested deeper than {MAX_DEPTH} levels or holds too many values"
            ),
        ));
    }
    Ok(s.causes)
}

// ---- names, labels, annotations ------------------------------------------------------------

pub const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower \
     case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
     character (e.g. 'example.com', regex used for validation is \
     '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
/// Another name for `DNS1123_SUBDOMAIN_MSG` (the message of a bad `metadata.name`).
pub const NAME_MESSAGE: &str = DNS1123_SUBDOMAIN_MSG;
pub const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case \
     alphanumeric characters or '-', and must start and end with an alphanumeric character \
     (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and \
     must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or \
     '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric \
     characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
     'MyValue',  or 'my_value',  or '12345', regex used for validation is \
     '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    let an = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty() && an(&b[0]) && an(&b[b.len() - 1]) && b.iter().all(|c| an(c) || *c == b'-')
}

/// `validation.IsDNS1123Subdomain`: the messages, empty when valid.
pub fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len(253));
    }
    if !s.split('.').all(is_dns_label) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    errs
}

/// `validation.IsDNS1123Label`: the messages, empty when valid.
pub fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !is_dns_label(s) {
        errs.push(DNS1123_LABEL_MSG.to_string());
    }
    errs
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `validation.IsQualifiedName`: the messages, empty when valid.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.splitn(3, '/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in dns1123_subdomain_errors(prefix) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix and \
                 '/' (e.g. 'example.com/MyName')"
            )]
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len(63)));
    }
    if !is_qualified_name_part(name) {
        errs.push(format!("name part {QUALIFIED_NAME_MSG}"));
    }
    errs
}

/// `validation.IsValidLabelValue`: the messages, empty when valid.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len(63));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(LABEL_VALUE_MSG.into());
    }
    errs
}

/// The largest total size (keys + values) of an object's annotations.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Echoed values are cut to this many characters.
const ECHO_MAX: usize = 256;

fn echo(s: &str) -> String {
    s.chars().take(ECHO_MAX).collect()
}

fn name_causes(meta: &Value, causes: &mut Vec<Cause>) {
    let name = meta["name"].as_str().unwrap_or("");
    let generate = meta["generateName"].as_str().unwrap_or("");
    if !name.is_empty() {
        for m in dns1123_subdomain_errors(name) {
            causes.push(Cause::invalid("metadata.name", &echo(name), &m));
        }
    } else if !generate.is_empty() {
        // A prefix may end with '-' (`maskTrailingDash`).
        let masked = match generate.strip_suffix('-') {
            Some(p) if !p.is_empty() => format!("{p}a"),
            _ => generate.to_string(),
        };
        for m in dns1123_subdomain_errors(&masked) {
            causes.push(Cause::invalid("metadata.generateName", &echo(generate), &m));
        }
    } else {
        causes.push(Cause::required(
            "metadata.name",
            "name or generateName is required",
        ));
    }
}

fn label_causes(meta: &Value, causes: &mut Vec<Cause>) {
    if let Some(labels) = meta["labels"].as_object() {
        for (k, v) in labels {
            for m in qualified_name_errors(k) {
                causes.push(Cause::invalid("metadata.labels", &echo(k), &m));
            }
            if let Some(v) = v.as_str() {
                for m in label_value_errors(v) {
                    causes.push(Cause::invalid("metadata.labels", &echo(v), &m));
                }
            }
        }
    }
    if let Some(annotations) = meta["annotations"].as_object() {
        let mut total = 0usize;
        for (k, v) in annotations {
            for m in qualified_name_errors(&k.to_lowercase()) {
                causes.push(Cause::invalid("metadata.annotations", &echo(k), &m));
            }
            total = total.saturating_add(k.len() + v.as_str().map_or(0, str::len));
        }
        if total > TOTAL_ANNOTATION_SIZE_LIMIT {
            causes.push(Cause::too_long(
                "metadata.annotations",
                TOTAL_ANNOTATION_SIZE_LIMIT,
            ));
        }
    }
}

/// `metadata.finalizers`: each a qualified name (`ValidateFinalizerName`), none twice.
fn finalizer_causes(meta: &Value, causes: &mut Vec<Cause>) {
    let Some(finalizers) = meta["finalizers"].as_array() else {
        return;
    };
    let mut seen = std::collections::BTreeSet::new();
    for (i, f) in finalizers.iter().enumerate() {
        let Some(f) = f.as_str() else { continue };
        let field = format!("metadata.finalizers[{i}]");
        for m in qualified_name_errors(f) {
            causes.push(Cause::invalid(field.clone(), &echo(f), &m));
        }
        if !seen.insert(f) {
            causes.push(Cause {
                reason: "FieldValueDuplicate".into(),
                message: format!("Duplicate value: {}", quote(&echo(f))),
                field,
            });
        }
    }
}

/// The warning the API server gives for a finalizer without a domain prefix.
pub fn finalizer_warnings(body: &Value) -> Vec<String> {
    body["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, f)| {
            let f = f.as_str()?;
            (!f.contains('/')).then(|| {
                format!(
                    "metadata.finalizers[{i}]: {}: prefer a domain-qualified finalizer name \
                     to avoid accidental conflicts with other finalizer writers",
                    quote(&echo(f))
                )
            })
        })
        .collect()
}

/// `metadata.ownerReferences` (`ValidateOwnerReferences`): apiVersion with a version, kind,
/// name and uid given, and at most one controller.
fn owner_reference_causes(meta: &Value, causes: &mut Vec<Cause>) {
    let Some(refs) = meta["ownerReferences"].as_array() else {
        return;
    };
    let mut controllers = Vec::new();
    for (i, r) in refs.iter().enumerate() {
        let field = |f: &str| format!("metadata.ownerReferences[{i}].{f}");
        let text = |f: &str| r[f].as_str().unwrap_or("");
        let api_version = text("apiVersion");
        let version = api_version.rsplit('/').next().unwrap_or("");
        if api_version.matches('/').count() > 1 {
            causes.push(Cause::invalid(
                field("apiVersion"),
                &echo(api_version),
                &format!("unexpected GroupVersion string: {}", echo(api_version)),
            ));
        } else if version.is_empty() {
            causes.push(Cause::invalid(
                field("apiVersion"),
                &echo(api_version),
                "version must not be empty",
            ));
        }
        for (f, what) in [("kind", "kind"), ("name", "name"), ("uid", "uid")] {
            if text(f).is_empty() {
                causes.push(Cause::invalid(
                    field(f),
                    "",
                    &format!("{what} must not be empty"),
                ));
            }
        }
        if r["controller"].as_bool() == Some(true) {
            controllers.push(format!("{}/{}", text("kind"), text("name")));
        }
    }
    if controllers.len() > 1 {
        causes.push(Cause::invalid_unquoted(
            "metadata.ownerReferences",
            &format!(
                "Only one reference can have Controller set to true. Found \"true\" in references for {}",
                controllers.join(" and ")
            ),
        ));
    }
}

/// Name, labels, annotations, finalizers and owner references, with the apiserver's messages.
pub fn metadata_causes(body: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let meta = &body["metadata"];
    name_causes(meta, &mut causes);
    label_causes(meta, &mut causes);
    finalizer_causes(meta, &mut causes);
    owner_reference_causes(meta, &mut causes);
    causes
}

/// `metadata.clusterName` set: always refused (the design doc's rule).
pub fn cluster_name_cause(body: &Value) -> Option<Cause> {
    match &body["metadata"]["clusterName"] {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(Cause::invalid(
            "metadata.clusterName",
            &echo(s),
            "clusterName is not used and must not be set",
        )),
        _ => Some(Cause::invalid_unquoted(
            "metadata.clusterName",
            "clusterName is not used and must not be set",
        )),
    }
}

// ---- spec ----------------------------------------------------------------------------------

const CIDR_MSG: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
const ADDRESS_MSG: &str =
    "must be a hostname, hostname:port, IP, IP:port or an https:// (or http://) URL with one of these";
const CA_BUNDLE_MSG: &str =
    "must be the base64 encoding of one or more PEM CERTIFICATE blocks and nothing else";

/// Whether `s` is an IPv4 or IPv6 CIDR (`10.0.0.0/8`, `2001:db8::/64`).
pub fn is_cidr(s: &str) -> bool {
    let Some((ip, prefix)) = s.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<std::net::IpAddr>() else {
        return false;
    };
    if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let max = if ip.is_ipv4() { 32 } else { 128 };
    prefix.parse::<u8>().is_ok_and(|p| p <= max)
}

fn is_hostname(h: &str) -> bool {
    let lower = h.to_ascii_lowercase();
    dns1123_subdomain_errors(&lower).is_empty()
}

fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.parse::<u16>().is_ok_and(|n| n > 0)
}

/// host, host:port, IPv4, IPv4:port, IPv6, [IPv6]:port.
fn is_authority(a: &str) -> bool {
    if a.parse::<std::net::Ipv6Addr>().is_ok() {
        return true;
    }
    if let Some(rest) = a.strip_prefix('[') {
        let Some((ip, port)) = rest.split_once(']') else {
            return false;
        };
        return ip.parse::<std::net::Ipv6Addr>().is_ok()
            && (port.is_empty() || port.strip_prefix(':').is_some_and(is_port));
    }
    let (host, port) = match a.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (a, None),
    };
    if port.is_some_and(|p| !is_port(p)) {
        return false;
    }
    host.parse::<std::net::Ipv4Addr>().is_ok() || is_hostname(host)
}

/// Whether `s` is a server address the registry takes.
pub fn is_server_address(s: &str) -> bool {
    if s.len() > 2048 || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    match s.split_once("://") {
        // kubeconfig servers may be plain http (a local or proxied API server).
        Some((scheme, rest))
            if scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("http") =>
        {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            !authority.contains('@') && is_authority(authority)
        }
        Some(_) => false,
        None => is_authority(s),
    }
}

/// The largest CA bundle taken (decoded).
pub const MAX_CA_BUNDLE: usize = 256 * 1024;

/// Why a caBundle is not base64 of PEM certificates, or None when it is.
pub fn ca_bundle_problem(b64: &str) -> Option<&'static str> {
    if b64.len() > MAX_CA_BUNDLE * 4 / 3 + 8 {
        return Some("it is too large");
    }
    let engine = base64::engine::general_purpose::STANDARD;
    let Ok(bytes) = engine.decode(b64.trim()) else {
        return Some("it is not valid base64");
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Some("it is not PEM text");
    };
    let mut rest = text.trim();
    let mut count = 0;
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    while !rest.is_empty() {
        let Some(body) = rest.strip_prefix(BEGIN) else {
            return Some("it holds something other than CERTIFICATE blocks");
        };
        let Some((inner, after)) = body.split_once(END) else {
            return Some("a CERTIFICATE block is not terminated");
        };
        let b64: String = inner.chars().filter(|c| !c.is_whitespace()).collect();
        let Ok(der) = engine.decode(b64) else {
            return Some("a CERTIFICATE block is not valid base64");
        };
        if x509_parser::parse_x509_certificate(&der).is_err() {
            return Some("a CERTIFICATE block is not an X.509 certificate");
        }
        count += 1;
        if count > 100 {
            return Some("it holds more than 100 certificates");
        }
        rest = after.trim_start();
    }
    if count == 0 {
        return Some("it is empty");
    }
    None
}

fn reference_causes(path: &str, r: &Value, causes: &mut Vec<Cause>) {
    let s = |k: &str| r[k].as_str().unwrap_or("");
    let kind = s("kind");
    if !kind.is_empty()
        && (kind.len() > 63
            || !kind.starts_with(|c: char| c.is_ascii_alphabetic())
            || !kind.chars().all(|c| c.is_ascii_alphanumeric()))
    {
        causes.push(Cause::invalid(
            format!("{path}.kind"),
            &echo(kind),
            "must be a kind: letters and digits starting with a letter, at most 63 characters",
        ));
    }
    let name = s("name");
    if !name.is_empty() {
        for m in dns1123_subdomain_errors(name) {
            causes.push(Cause::invalid(format!("{path}.name"), &echo(name), &m));
        }
    }
    let ns = s("namespace");
    if !ns.is_empty() {
        for m in dns1123_label_errors(ns) {
            causes.push(Cause::invalid(format!("{path}.namespace"), &echo(ns), &m));
        }
    }
}

/// Endpoints, CA bundle and authInfo references.
pub fn spec_causes(body: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = &body["spec"];
    let ep = &spec["kubernetesApiEndpoints"];
    if let Some(list) = ep["serverEndpoints"].as_array() {
        for (i, e) in list.iter().enumerate().take(1000) {
            let base = format!("spec.kubernetesApiEndpoints.serverEndpoints[{i}]");
            if let Some(cidr) = e["clientCIDR"].as_str() {
                if !cidr.is_empty() && !is_cidr(cidr) {
                    causes.push(Cause::invalid(
                        format!("{base}.clientCIDR"),
                        &echo(cidr),
                        CIDR_MSG,
                    ));
                }
            }
            match e["serverAddress"].as_str() {
                None | Some("") => causes.push(Cause::required(
                    format!("{base}.serverAddress"),
                    "the address of the API server for clients in clientCIDR",
                )),
                Some(a) if a.contains('@') => causes.push(Cause::forbidden(
                    format!("{base}.serverAddress"),
                    &format!("must not carry credentials (user:password@): {POINTERS_ONLY}"),
                )),
                Some(a) if !is_server_address(a) => causes.push(Cause::invalid(
                    format!("{base}.serverAddress"),
                    &echo(a),
                    ADDRESS_MSG,
                )),
                Some(_) => {}
            }
        }
        if list.len() > 1000 {
            causes.push(Cause::forbidden(
                "spec.kubernetesApiEndpoints.serverEndpoints",
                "at most 1000 endpoints",
            ));
        }
    }
    if let Some(ca) = ep["caBundle"].as_str() {
        if let Some(why) = ca_bundle_problem(ca) {
            causes.push(Cause::invalid_unquoted(
                "spec.kubernetesApiEndpoints.caBundle",
                &format!("{CA_BUNDLE_MSG} ({why})"),
            ));
        }
    }
    for who in ["user", "controller"] {
        let r = &spec["authInfo"][who];
        if r.is_object() {
            reference_causes(&format!("spec.authInfo.{who}"), r, &mut causes);
        }
    }
    causes
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

/// `validate_cluster` of a raw POST/PUT body: parsed here (400 if it is not JSON), with
/// duplicate keys treated like unknown fields (Strict: 400, Warn: warnings). Returns the
/// parsed body and the warnings.
pub fn validate_cluster_raw(
    raw: &[u8],
    mode: FieldValidation,
) -> Result<(Value, Vec<String>), KubeError> {
    let body: Value = serde_json::from_slice(raw)
        .map_err(|e| KubeError::undecodable(&CLUSTERS, &e.to_string()))?;
    let duplicates = if mode == FieldValidation::Ignore {
        vec![]
    } else {
        duplicate_fields(raw)
    };
    let warnings = validate_with_duplicates(&body, &duplicates, mode)?;
    Ok((body, warnings))
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
    use actix_web::ResponseError;
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
        assert_eq!(c.metadata.name, "alpha");
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
        assert_eq!(
            validate_cluster_raw(raw, FieldValidation::Strict)
                .err()
                .map(|e| e.to_string()),
            Some(
                "Cluster in version \"v1alpha1\" cannot be handled as a Cluster: strict decoding \
                 error: duplicate field \"metadata.name\", unknown field \"spec.bogus\""
                    .into()
            )
        );
        let (body, warnings) = validate_cluster_raw(raw, FieldValidation::Warn)
            .ok()
            .unwrap_or_default();
        assert_eq!(body["metadata"]["name"], "b");
        assert_eq!(
            warnings,
            vec![
                "duplicate field \"metadata.name\"".to_string(),
                "unknown field \"spec.bogus\"".to_string()
            ]
        );
        assert!(validate_cluster_raw(raw, FieldValidation::Ignore).is_ok());
        assert_eq!(
            validate_cluster_raw(b"{nope", FieldValidation::Ignore)
                .err()
                .map(|e| e.status_code().as_u16()),
            Some(400)
        );
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
