//! X.509 without I/O: the CAs of a cluster, the service's client certificate, and CSRs
//! checked against the subject policy and signed.

use chrono::{DateTime, Duration, Utc};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, DnValue,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SerialNumber,
    PKCS_ECDSA_P256_SHA256,
};
use ring::rand::{SecureRandom, SystemRandom};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::oid_registry::{
    Oid, OID_EC_P256, OID_KEY_TYPE_EC_PUBLIC_KEY, OID_NIST_EC_P384, OID_PKCS1_RSAENCRYPTION,
    OID_SIG_ED25519, OID_X509_COMMON_NAME, OID_X509_ORGANIZATION_NAME,
};
use x509_parser::prelude::FromDer;

use crate::config::{split_list, CertificatesSection, Secret};
use crate::domain::keypair::KeyPairKind;

/// A freshly made key pair: the certificate PEM and the private key PEM (never logged).
#[derive(Debug, Clone)]
pub struct Issued {
    pub kind: KeyPairKind,
    pub certificate: String,
    pub private_key: Secret,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("X.509 error: {0}")]
pub struct X509Error(pub String);

impl From<rcgen::Error> for X509Error {
    fn from(e: rcgen::Error) -> Self {
        X509Error(e.to_string())
    }
}

fn offset_time(t: DateTime<Utc>) -> Result<time::OffsetDateTime, X509Error> {
    time::OffsetDateTime::from_unix_timestamp(t.timestamp())
        .map_err(|e| X509Error(format!("time out of range: {e}")))
}

fn random_serial() -> Result<SerialNumber, X509Error> {
    let mut bytes = [0_u8; 16];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| X509Error("the system random generator failed".into()))?;
    bytes[0] &= 0x7f; // a positive INTEGER
    bytes[0] |= 0x01; // of full length
    Ok(SerialNumber::from_slice(&bytes))
}

fn name(entries: &[(DnType, &str)]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    for (ty, value) in entries {
        dn.push(ty.clone(), *value);
    }
    dn
}

fn ca_params(
    common_name: &str,
    now: DateTime<Utc>,
    days: u32,
) -> Result<CertificateParams, X509Error> {
    let mut p = CertificateParams::default();
    p.distinguished_name = name(&[(DnType::CommonName, common_name)]);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.not_before = offset_time(now - Duration::hours(1))?;
    p.not_after = offset_time(now + Duration::days(i64::from(days)))?;
    p.serial_number = Some(random_serial()?);
    Ok(p)
}

fn self_signed_ca(
    kind: KeyPairKind,
    common_name: &str,
    now: DateTime<Utc>,
    days: u32,
) -> Result<Issued, X509Error> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let cert = ca_params(common_name, now, days)?.self_signed(&key)?;
    Ok(Issued {
        kind,
        certificate: cert.pem(),
        private_key: Secret::new(key.serialize_pem()),
    })
}

/// The service's client certificate (CN=admin, O=system:masters), signed by the cluster CA.
pub fn client_certificate(
    ca_certificate: &str,
    ca_key: &str,
    now: DateTime<Utc>,
    days: u32,
) -> Result<Issued, X509Error> {
    let ca_key = KeyPair::from_pem(ca_key)?;
    let issuer = Issuer::from_ca_cert_pem(ca_certificate, ca_key)?;
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut p = CertificateParams::default();
    p.distinguished_name = name(&[
        (DnType::CommonName, "admin"),
        (DnType::OrganizationName, "system:masters"),
    ]);
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    p.use_authority_key_identifier_extension = true;
    p.not_before = offset_time(now - Duration::hours(1))?;
    p.not_after = capped(now, days, ca_certificate)?;
    p.serial_number = Some(random_serial()?);
    let cert = p.signed_by(&key, &issuer)?;
    Ok(Issued {
        kind: KeyPairKind::Client,
        certificate: cert.pem(),
        private_key: Secret::new(key.serialize_pem()),
    })
}

/// Everything a new cluster (or a CA rotation) needs: the Kubernetes, etcd and front-proxy
/// CAs, and the service's client certificate. The Kubernetes CA's common name is the
/// cluster's name, as in Magnum.
pub fn cluster_pki(
    cluster_name: &str,
    now: DateTime<Utc>,
    ca_days: u32,
) -> Result<Vec<Issued>, X509Error> {
    let ca = self_signed_ca(KeyPairKind::Ca, cluster_name, now, ca_days)?;
    let etcd = self_signed_ca(KeyPairKind::EtcdCa, "etcd-ca", now, ca_days)?;
    let proxy = self_signed_ca(KeyPairKind::FrontProxyCa, "front-proxy-ca", now, ca_days)?;
    let client = client_certificate(&ca.certificate, ca.private_key.expose(), now, ca_days)?;
    Ok(vec![ca, etcd, proxy, client])
}

/// The end of a certificate's validity.
pub fn not_after(certificate_pem: &str) -> Option<DateTime<Utc>> {
    let der = pem_der(certificate_pem, "CERTIFICATE")?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der).ok()?;
    DateTime::from_timestamp(cert.validity().not_after.timestamp(), 0)
}

/// `now + days`, but never past the issuing CA.
fn capped(
    now: DateTime<Utc>,
    days: u32,
    ca_certificate: &str,
) -> Result<time::OffsetDateTime, X509Error> {
    let mut end = now + Duration::days(i64::from(days));
    if let Some(ca_end) = not_after(ca_certificate) {
        end = end.min(ca_end);
    }
    offset_time(end)
}

/// The first PEM block of `text`: its label and contents.
fn pem_block(text: &str) -> Option<(String, Vec<u8>)> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(text.trim().as_bytes()).ok()?;
    Some((pem.label, pem.contents))
}

fn pem_der(text: &str, label: &str) -> Option<Vec<u8>> {
    pem_block(text).filter(|(l, _)| l == label).map(|(_, d)| d)
}

/// Key types a CSR may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    Rsa,
    EcdsaP256,
    EcdsaP384,
    Ed25519,
}

impl KeyType {
    pub const ALL: [KeyType; 4] = [
        KeyType::Rsa,
        KeyType::EcdsaP256,
        KeyType::EcdsaP384,
        KeyType::Ed25519,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            KeyType::Rsa => "rsa",
            KeyType::EcdsaP256 => "ecdsa-p256",
            KeyType::EcdsaP384 => "ecdsa-p384",
            KeyType::Ed25519 => "ed25519",
        }
    }

    pub fn parse(text: &str) -> Option<KeyType> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// What a CSR may ask for, from `[certificates]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CsrPolicy {
    pub allowed_key_types: Vec<KeyType>,
    pub min_rsa_key_bits: u32,
    pub privileged_groups: Vec<String>,
    pub privileged_user_prefixes: Vec<String>,
    pub max_validity_days: u32,
}

/// The most an RSA key may have: ring verifies signatures of up to 8192 bits.
pub const MAX_RSA_KEY_BITS: u32 = 8192;

impl CsrPolicy {
    /// Assumes validated settings (unknown key types are skipped).
    pub fn from_settings(s: &CertificatesSection) -> CsrPolicy {
        CsrPolicy {
            allowed_key_types: split_list(&s.allowed_key_types)
                .iter()
                .filter_map(|t| KeyType::parse(t))
                .collect(),
            min_rsa_key_bits: s.min_rsa_key_bits,
            privileged_groups: split_list(&s.privileged_groups),
            privileged_user_prefixes: split_list(&s.privileged_user_prefixes),
            max_validity_days: s.max_validity_days,
        }
    }

    /// The accepted key types, as a sentence.
    fn accepted(&self) -> String {
        let items: Vec<String> = self
            .allowed_key_types
            .iter()
            .map(|k| match k {
                KeyType::Rsa => format!(
                    "RSA of {} to {MAX_RSA_KEY_BITS} bits",
                    self.min_rsa_key_bits
                ),
                KeyType::EcdsaP256 => "ECDSA on P-256".into(),
                KeyType::EcdsaP384 => "ECDSA on P-384".into(),
                KeyType::Ed25519 => "Ed25519".into(),
            })
            .collect();
        items.join(", ")
    }
}

/// Why a CSR was refused; each renders as the sentence the client gets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CsrError {
    /// Not a CSR, or its signature does not verify (400).
    #[error("Received invalid csr: {0}.")]
    Invalid(String),
    /// A key type or size the policy does not accept (400).
    #[error("The CSR's key is not accepted: {found}. Accepted keys: {accepted}.")]
    KeyType { found: String, accepted: String },
    /// A subject this service cannot sign as asked (400).
    #[error("The CSR subject is not accepted: {0}.")]
    Subject(String),
}

/// A CSR that parsed, verified and passed the key policy.
#[derive(Debug, Clone)]
pub struct CheckedCsr {
    subject: Vec<(Vec<u64>, String)>,
    spki: Vec<u8>,
    key_type: KeyType,
    /// The subject as `CN=..., O=...`, for messages.
    pub subject_text: String,
    /// Set when the subject names a privileged group or user: what it names.
    pub privileged: Option<String>,
}

fn oid_components(oid: &Oid<'_>) -> Vec<u64> {
    oid.iter().map(|i| i.collect()).unwrap_or_default()
}

fn short_name(oid: &Oid<'_>) -> String {
    match oid.to_id_string().as_str() {
        "2.5.4.3" => "CN".into(),
        "2.5.4.10" => "O".into(),
        "2.5.4.11" => "OU".into(),
        "2.5.4.6" => "C".into(),
        "2.5.4.8" => "ST".into(),
        "2.5.4.7" => "L".into(),
        "1.2.840.113549.1.9.1" => "emailAddress".into(),
        other => other.to_string(),
    }
}

/// Parses and verifies a PEM CSR, checks its key against the policy and reads its subject.
/// Whether a privileged subject may be signed is the caller's (policy) decision.
pub fn check_csr(pem_text: &str, policy: &CsrPolicy) -> Result<CheckedCsr, CsrError> {
    let der = csr_der(pem_text)?;
    let (rest, csr) = X509CertificationRequest::from_der(&der)
        .map_err(|_| CsrError::Invalid("it is not a valid PKCS#10 certificate request".into()))?;
    if !rest.is_empty() {
        return Err(CsrError::Invalid(
            "trailing data after the certificate request".into(),
        ));
    }
    let info = &csr.certification_request_info;
    let spki = &info.subject_pki;
    // The key first: its type and size decide whether the signature can be checked at all.
    let key_type = key_type_of(spki, policy)?;
    csr.verify_signature()
        .map_err(|_| CsrError::Invalid("its signature does not verify with its own key".into()))?;
    let subject = subject_of(&info.subject)?;
    let privileged = privilege_of(policy, &subject.common_name, &subject.groups);
    Ok(CheckedCsr {
        subject: subject.attributes,
        spki: spki.raw.to_vec(),
        key_type,
        subject_text: subject.shown.join(", "),
        privileged,
    })
}

/// The DER of a PEM certificate request block.
fn csr_der(pem_text: &str) -> Result<Vec<u8>, CsrError> {
    let (label, der) = pem_block(pem_text)
        .ok_or_else(|| CsrError::Invalid("it is not a PEM-encoded certificate request".into()))?;
    if !matches!(
        label.as_str(),
        "CERTIFICATE REQUEST" | "NEW CERTIFICATE REQUEST"
    ) {
        return Err(CsrError::Invalid(format!(
            "expected a PEM block of type CERTIFICATE REQUEST, got {label}"
        )));
    }
    Ok(der)
}

/// The CSR key's type, if the policy accepts it (RSA within the size bounds, ECDSA on P-256 or
/// P-384, Ed25519, as the policy allows).
fn key_type_of(
    spki: &x509_parser::x509::SubjectPublicKeyInfo<'_>,
    policy: &CsrPolicy,
) -> Result<KeyType, CsrError> {
    let alg = &spki.algorithm.algorithm;
    let found = |what: String| CsrError::KeyType {
        found: what,
        accepted: policy.accepted(),
    };
    let key_type = if *alg == OID_PKCS1_RSAENCRYPTION {
        let bits = spki.parsed().map(|k| k.key_size()).unwrap_or(0) as u32;
        if bits < policy.min_rsa_key_bits || bits > MAX_RSA_KEY_BITS {
            return Err(found(format!("RSA of {bits} bits")));
        }
        KeyType::Rsa
    } else if *alg == OID_KEY_TYPE_EC_PUBLIC_KEY {
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.as_oid().ok());
        match curve {
            Some(c) if c == OID_EC_P256 => KeyType::EcdsaP256,
            Some(c) if c == OID_NIST_EC_P384 => KeyType::EcdsaP384,
            Some(c) => return Err(found(format!("ECDSA on curve {}", c.to_id_string()))),
            None => return Err(found("ECDSA without a named curve".into())),
        }
    } else if *alg == OID_SIG_ED25519 {
        KeyType::Ed25519
    } else {
        return Err(found(format!("key algorithm {}", alg.to_id_string())));
    };
    if !policy.allowed_key_types.contains(&key_type) {
        let what = match key_type {
            KeyType::Rsa => "RSA".to_string(),
            KeyType::EcdsaP256 => "ECDSA on P-256".into(),
            KeyType::EcdsaP384 => "ECDSA on P-384".into(),
            KeyType::Ed25519 => "Ed25519".into(),
        };
        return Err(found(what));
    }
    Ok(key_type)
}

/// A CSR's subject as it is signed and shown, with what Kubernetes reads from it.
struct Subject {
    /// (attribute OID components, value), in order.
    attributes: Vec<(Vec<u64>, String)>,
    /// `CN=...`, `O=...` in order.
    shown: Vec<String>,
    /// The user name.
    common_name: String,
    /// The groups (`O`).
    groups: Vec<String>,
}

/// The subject: one value per attribute, as Kubernetes reads CN (user) and O (groups); a
/// common name is required.
fn subject_of(name: &x509_parser::x509::X509Name<'_>) -> Result<Subject, CsrError> {
    let mut attributes: Vec<(Vec<u64>, String)> = Vec::new();
    let mut shown = Vec::new();
    let mut common_name = None;
    let mut groups = Vec::new();
    for rdn in name.iter() {
        let attrs: Vec<_> = rdn.iter().collect();
        let [attr] = attrs.as_slice() else {
            return Err(CsrError::Subject(
                "multi-valued relative distinguished names (A=x+B=y) are not supported".into(),
            ));
        };
        let label = short_name(attr.attr_type());
        let value = attr
            .as_str()
            .map_err(|_| CsrError::Subject(format!("the {label} attribute is not a string")))?
            .to_string();
        let components = oid_components(attr.attr_type());
        if attributes.iter().any(|(o, _)| *o == components) {
            let values: Vec<&str> = attributes
                .iter()
                .filter(|(o, _)| *o == components)
                .map(|(_, v)| v.as_str())
                .chain(std::iter::once(value.as_str()))
                .collect();
            return Err(CsrError::Subject(format!(
                "it names {label} more than once ({}); Fleetyard signs one value per attribute, so request one group per certificate",
                values.join(", ")
            )));
        }
        if *attr.attr_type() == OID_X509_COMMON_NAME {
            common_name = Some(value.clone());
        } else if *attr.attr_type() == OID_X509_ORGANIZATION_NAME {
            groups.push(value.clone());
        }
        shown.push(format!("{label}={value}"));
        attributes.push((components, value));
    }
    let Some(common_name) = common_name else {
        return Err(CsrError::Subject(
            "it has no common name (CN), which Kubernetes takes as the user name".into(),
        ));
    };
    if common_name.trim().is_empty() {
        return Err(CsrError::Subject("its common name (CN) is empty".into()));
    }
    Ok(Subject {
        attributes,
        shown,
        common_name,
        groups,
    })
}

/// Why the subject is privileged (a privileged group, or a user name with a privileged
/// prefix), if it is.
fn privilege_of(policy: &CsrPolicy, cn: &str, groups: &[String]) -> Option<String> {
    groups
        .iter()
        .find(|g| policy.privileged_groups.iter().any(|p| p == *g))
        .map(|g| format!("the privileged group {g} (O={g})"))
        .or_else(|| {
            policy
                .privileged_user_prefixes
                .iter()
                .find(|p| cn.starts_with(p.as_str()))
                .map(|p| format!("the privileged user {cn} (CN starting with {p})"))
        })
}

/// Signs a checked CSR with a CA: the CSR's subject, a client-authentication certificate
/// (the CSR's requested extensions are not copied), valid from an hour ago for
/// `validity_days` but never past the CA, with a random serial.
pub fn sign(
    csr: &CheckedCsr,
    ca_certificate: &str,
    ca_key: &str,
    now: DateTime<Utc>,
    validity_days: u32,
) -> Result<String, X509Error> {
    let ca_key = KeyPair::from_pem(ca_key)?;
    let issuer = Issuer::from_ca_cert_pem(ca_certificate, ca_key)?;
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    for (oid, value) in &csr.subject {
        let value = match rcgen::string::PrintableString::try_from(value.as_str()) {
            Ok(s) => DnValue::PrintableString(s),
            Err(_) => DnValue::Utf8String(value.clone()),
        };
        dn.push(DnType::from_oid(oid), value);
    }
    p.distinguished_name = dn;
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = match csr.key_type {
        KeyType::Rsa => vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ],
        _ => vec![KeyUsagePurpose::DigitalSignature],
    };
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    p.use_authority_key_identifier_extension = true;
    p.not_before = offset_time(now - Duration::hours(1))?;
    p.not_after = capped(now, validity_days, ca_certificate)?;
    p.serial_number = Some(random_serial()?);
    let key = rcgen::SubjectPublicKeyInfo::from_der(&csr.spki)?;
    Ok(p.signed_by(&key, &issuer)?.pem())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> CsrPolicy {
        CsrPolicy::from_settings(&CertificatesSection::default())
    }

    fn csr(entries: &[(DnType, &str)], key: &KeyPair) -> String {
        let mut p = CertificateParams::default();
        p.distinguished_name = name(entries);
        p.serialize_request(key).expect("csr").pem().expect("pem")
    }

    #[test]
    fn a_cluster_gets_three_cas_and_a_client_certificate_signed_by_its_ca() {
        let now = Utc::now();
        let set = cluster_pki("k8s-a", now, 3650).expect("pki");
        let kinds: Vec<_> = set.iter().map(|i| i.kind).collect();
        assert_eq!(kinds, KeyPairKind::ALL.to_vec());
        let der = pem_der(&set[3].certificate, "CERTIFICATE").expect("der");
        let (_, client) = x509_parser::parse_x509_certificate(&der).expect("x509");
        assert_eq!(client.issuer().to_string(), "CN=k8s-a");
        assert_eq!(client.subject().to_string(), "CN=admin, O=system:masters");
        assert!(set[0].private_key.expose().contains("PRIVATE KEY"));
        assert!(!format!("{:?}", set[0]).contains("PRIVATE KEY"));
    }

    #[test]
    fn an_ordinary_subject_is_signed_and_chains_to_the_ca() {
        let now = Utc::now();
        let set = cluster_pki("k8s-b", now, 3650).expect("pki");
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("key");
        let checked = check_csr(
            &csr(
                &[
                    (DnType::CommonName, "alice"),
                    (DnType::OrganizationName, "dev"),
                ],
                &key,
            ),
            &policy(),
        )
        .expect("accepted");
        assert_eq!(checked.privileged, None);
        assert_eq!(checked.subject_text, "CN=alice, O=dev");
        let pem = sign(
            &checked,
            &set[0].certificate,
            set[0].private_key.expose(),
            now,
            30,
        )
        .expect("signed");
        let der = pem_der(&pem, "CERTIFICATE").expect("der");
        let (_, cert) = x509_parser::parse_x509_certificate(&der).expect("x509");
        let ca_der = pem_der(&set[0].certificate, "CERTIFICATE").expect("der");
        let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).expect("x509");
        cert.verify_signature(Some(ca.public_key()))
            .expect("chains to the CA");
        let days = (cert.validity().not_after.timestamp() - now.timestamp()) / 86400;
        assert_eq!(days, 30);
    }

    #[test]
    fn privileged_groups_and_system_users_are_flagged() {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("key");
        let c = check_csr(
            &csr(
                &[
                    (DnType::CommonName, "admin"),
                    (DnType::OrganizationName, "system:masters"),
                ],
                &key,
            ),
            &policy(),
        )
        .expect("parsed");
        assert_eq!(
            c.privileged.as_deref(),
            Some("the privileged group system:masters (O=system:masters)")
        );
        let c = check_csr(
            &csr(&[(DnType::CommonName, "system:node:n1")], &key),
            &policy(),
        )
        .expect("parsed");
        assert!(c.privileged.is_some());
    }

    #[test]
    fn key_types_outside_the_policy_are_refused() {
        let key = KeyPair::generate_for(&rcgen::PKCS_ED25519).expect("key");
        let text = csr(&[(DnType::CommonName, "bob")], &key);
        assert!(check_csr(&text, &policy()).is_ok());
        let mut only_rsa = policy();
        only_rsa.allowed_key_types = vec![KeyType::Rsa];
        let err = check_csr(&text, &only_rsa).expect_err("refused");
        assert_eq!(
            err.to_string(),
            "The CSR's key is not accepted: Ed25519. Accepted keys: RSA of 2048 to 8192 bits."
        );
    }

    #[test]
    fn malformed_requests_and_odd_subjects_are_refused() {
        let err = check_csr("hello", &policy()).expect_err("refused");
        assert!(err.to_string().starts_with("Received invalid csr"), "{err}");
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("key");
        let err = check_csr(&csr(&[(DnType::OrganizationName, "dev")], &key), &policy())
            .expect_err("no CN");
        assert!(err.to_string().contains("no common name"), "{err}");
    }

    #[test]
    fn ca_cert_types_name_their_ca() {
        assert_eq!(KeyPairKind::for_ca_cert_type(None), KeyPairKind::Ca);
        assert_eq!(
            KeyPairKind::for_ca_cert_type(Some("kubernetes")),
            KeyPairKind::Ca
        );
        assert_eq!(
            KeyPairKind::for_ca_cert_type(Some("etcd")),
            KeyPairKind::EtcdCa
        );
        assert_eq!(
            KeyPairKind::for_ca_cert_type(Some("front-proxy")),
            KeyPairKind::FrontProxyCa
        );
        for k in KeyPairKind::ALL {
            assert_eq!(KeyPairKind::parse(k.as_str()), Some(k));
        }
    }
}
