//! `spec`: server addresses and client CIDRs that parse, CA bundles that are PEM
//! certificates, credential pointers that are references.

use base64::Engine;
use serde_json::Value;

use super::credentials::POINTERS_ONLY;
use super::metadata::echo;
use crate::api::kube::status::Cause;
use crate::domain::kube_names::{
    dns1123_label_errors, dns1123_subdomain_errors, is_cidr, is_server_address, ADDRESS_MSG,
    CIDR_MSG,
};

pub(super) const CA_BUNDLE_MSG: &str =
    "must be the base64 encoding of one or more PEM CERTIFICATE blocks and nothing else";

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

pub(super) fn reference_causes(path: &str, r: &Value, causes: &mut Vec<Cause>) {
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
